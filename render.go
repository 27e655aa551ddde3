package store

import (
	"iter"
	"strings"
	"text/template"
)

// GetSplit returns the value of key in group as an iterator over its parts
// separated by sep, as [strings.SplitSeq] splits them. A missing or expired
// key gives [ErrNotFound].
func (h *reader) GetSplit(group, key, sep string) (iter.Seq[string], error) {
	v, err := h.getEntry("get split", group, key)
	if err != nil {
		return nil, err
	}
	return strings.SplitSeq(v.Value, sep), nil
}

// GetFields returns the value of key in group as an iterator over its
// whitespace-separated fields, as [strings.FieldsSeq] splits them. A
// missing or expired key gives [ErrNotFound].
func (h *reader) GetFields(group, key string) (iter.Seq[string], error) {
	v, err := h.getEntry("get fields", group, key)
	if err != nil {
		return nil, err
	}
	return strings.FieldsSeq(v.Value), nil
}

// Render executes the [text/template] tmpl with the live keys and values
// of group as its data, a map[string]string: "Hello {{ .name }}" renders
// the value of key "name". A key missing from the group renders as
// "<no value>", as text/template renders a missing map key.
func (h *reader) Render(tmpl, group string) (string, error) {
	t, err := template.New("render").Parse(tmpl)
	if err != nil {
		return "", fail("render", group, "", err)
	}
	vars, err := h.GetAll(group)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, vars); err != nil {
		return "", fail("render", group, "", err)
	}
	return b.String(), nil
}
