package server

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The libraries Redis gives scripts beyond Lua's own, as far as gostore
// has them: bit (LuaBitOp) and cjson (Lua CJSON's encode and decode).
// cmsgpack and struct are not there.

// openBit returns the bit library: LuaBitOp's operations on 32-bit
// integers, each argument reduced modulo 2^32 and each result a signed
// 32-bit number.
func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	arg := func(L *lua.LState, i int) uint32 { return uint32(tobit(float64(L.CheckNumber(i)))) }
	ret := func(L *lua.LState, v uint32) int { L.Push(lua.LNumber(int32(v))); return 1 }
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	shift := func(op func(v uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int { return ret(L, op(arg(L, 1), uint(arg(L, 2)&31))) }
	}
	fns := map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":    func(L *lua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":    fold(func(a, b uint32) uint32 { return a & b }),
		"bor":     fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(v uint32, n uint) uint32 { return v << n }),
		"rshift":  shift(func(v uint32, n uint) uint32 { return v >> n }),
		"arshift": shift(func(v uint32, n uint) uint32 { return uint32(int32(v) >> n) }),
		"rol":     shift(func(v uint32, n uint) uint32 { return v<<n | v>>((32-n)&31) }),
		"ror":     shift(func(v uint32, n uint) uint32 { return v>>n | v<<((32-n)&31) }),
		"bswap": func(L *lua.LState) int {
			v := arg(L, 1)
			return ret(L, v>>24|(v>>8)&0xff00|(v&0xff00)<<8|v<<24)
		},
		"tohex": func(L *lua.LState) int {
			v := arg(L, 1)
			n := 8
			if L.GetTop() >= 2 {
				n = int(int32(arg(L, 2)))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			n = min(n, 8)
			b := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				b[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(b))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// tobit reduces a number to a 32-bit integer as LuaBitOp does: rounded
// to the nearest integer, modulo 2^32.
func tobit(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.Mod(math.RoundToEven(f), 1<<32)
	if f < 0 {
		f += 1 << 32
	}
	return int32(uint32(f))
}

// cjsonNull is cjson.null, the value JSON's null decodes to (Lua CJSON's
// lightuserdata NULL).
type cjsonNull struct{}

// maxJSONDepth is Lua CJSON's default nesting limit, for encoding and
// decoding.
const maxJSONDepth = 1000

// openCJSON returns the cjson library: encode and decode, with Lua
// CJSON's rules as Redis configures it.
func openCJSON(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	null.Value = cjsonNull{}
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'encode' (expected 1 argument)")
		}
		var b strings.Builder
		if msg := jsonEncode(&b, L.Get(1), 0); msg != "" {
			L.RaiseError("%s", msg)
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			L.RaiseError("cjson.decode: invalid JSON: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			L.RaiseError("cjson.decode: invalid JSON: text after the value at character %d", dec.InputOffset()+1)
		}
		lv, ok := jsonToLua(L, v, null, 0)
		if !ok {
			L.RaiseError("Found too many nested data structures (%d) at character 1", maxJSONDepth+1)
		}
		L.Push(lv)
		return 1
	}))
	return t
}

// jsonEncode writes v as Lua CJSON does, or returns the error: numbers
// as %.14g, "/" escaped, a table with only positive integer keys as an
// array (nil holes as null), any other table an object with string or
// number keys; an empty table is {}.
func jsonEncode(b *strings.Builder, v lua.LValue, depth int) string {
	switch v := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return "Cannot serialise number: must not be NaN or Inf"
		}
		b.WriteString(formatLuaNumber(f))
	case lua.LString:
		jsonString(b, string(v))
	case *lua.LUserData:
		if _, ok := v.Value.(cjsonNull); ok {
			b.WriteString("null")
			return ""
		}
		return "Cannot serialise userdata: type not supported"
	case *lua.LTable:
		if depth >= maxJSONDepth {
			return fmt.Sprintf("Cannot serialise, excessive nesting (%d)", depth+1)
		}
		if n, ok := jsonArrayLen(v); ok && n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if msg := jsonEncode(b, v.RawGetInt(i), depth+1); msg != "" {
					return msg
				}
			}
			b.WriteByte(']')
			return ""
		}
		b.WriteByte('{')
		first := true
		var msg string
		v.ForEach(func(k, e lua.LValue) {
			if msg != "" {
				return
			}
			var key string
			switch k := k.(type) {
			case lua.LString:
				key = string(k)
			case lua.LNumber:
				key = formatLuaNumber(float64(k))
			default:
				msg = "Cannot serialise " + k.Type().String() + ": table key must be a number or string"
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			jsonString(b, key)
			b.WriteByte(':')
			msg = jsonEncode(b, e, depth+1)
		})
		if msg != "" {
			return msg
		}
		b.WriteByte('}')
	default:
		return "Cannot serialise " + v.Type().String() + ": type not supported"
	}
	return ""
}

// jsonArrayLen reports whether t is an array for Lua CJSON (only
// positive integer keys, not excessively sparse) and its length.
func jsonArrayLen(t *lua.LTable) (int, bool) {
	n, count := 0, 0
	array := true
	t.ForEach(func(k, _ lua.LValue) {
		f, ok := k.(lua.LNumber)
		if !ok || float64(f) < 1 || float64(f) != math.Floor(float64(f)) {
			array = false
			return
		}
		n = max(n, int(f))
		count++
	})
	// Lua CJSON's default: an array whose length is over 10 and more
	// than twice its item count is too sparse, and is an error there;
	// here it is an object.
	if !array || (n > 10 && n > 2*count) {
		return 0, false
	}
	return n, true
}

// jsonString writes s as a JSON string, escaped as Lua CJSON escapes.
func jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// formatLuaNumber formats f as Lua 5.1 does (%.14g).
func formatLuaNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'g', 14, 64)
	// C's %g drops trailing zeros of the fraction; Go's keeps them with a
	// precision.
	if mant, exp, ok := strings.Cut(s, "e"); ok {
		if strings.Contains(mant, ".") {
			mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		}
		if len(exp) == 2 { // e+5 → e+05, as C writes at least two digits
			exp = exp[:1] + "0" + exp[1:]
		}
		return mant + "e" + exp
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// jsonToLua converts a decoded JSON value to Lua: objects and arrays to
// tables, null to cjson.null. It reports false past maxJSONDepth.
func jsonToLua(L *lua.LState, v any, null lua.LValue, depth int) (lua.LValue, bool) {
	if depth > maxJSONDepth {
		return nil, false
	}
	switch v := v.(type) {
	case nil:
		return null, true
	case bool:
		return lua.LBool(v), true
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return lua.LNumber(f), true
	case string:
		return lua.LString(v), true
	case []any:
		t := L.CreateTable(len(v), 0)
		for i, e := range v {
			lv, ok := jsonToLua(L, e, null, depth+1)
			if !ok {
				return nil, false
			}
			t.RawSetInt(i+1, lv)
		}
		return t, true
	case map[string]any:
		t := L.CreateTable(0, len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			lv, ok := jsonToLua(L, v[k], null, depth+1)
			if !ok {
				return nil, false
			}
			t.RawSetString(k, lv)
		}
		return t, true
	}
	return lua.LNil, true
}
