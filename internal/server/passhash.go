package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// A users file's password hashes are bcrypt ("$2a$…", "$2b$…", "$2y$…")
// or argon2id in the PHC string format that libargon2, passlib and most
// password tools write:
//
//	$argon2id$v=19$m=65536,t=3,p=4$<salt>$<hash>
//
// with the salt and hash in unpadded standard base64 and m in KiB.

const argon2idPrefix = "$argon2id$"

// Bounds on an argon2id hash's parameters. Each check of a password
// takes m KiB of memory and t passes over it, so a users file cannot set
// them past what one AUTH may reasonably cost.
const (
	argon2MaxMemoryKiB = 1 << 20 // 1 GiB
	argon2MaxTime      = 64
	argon2MinSalt      = 8
	argon2MinKey       = 16
	argon2MaxKey       = 1024
)

// The parameters HashPasswordArgon2id uses: RFC 9106's second
// recommended option (64 MiB, 3 passes, 4 lanes), with a 16-byte salt
// and a 32-byte hash.
const (
	argon2Memory  = 64 << 10
	argon2Time    = 3
	argon2Threads = 4
)

// argon2idHash is a parsed argon2id hash.
type argon2idHash struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

// parseArgon2id parses an argon2id hash in the PHC string format.
func parseArgon2id(s string) (argon2idHash, error) {
	var h argon2idHash
	parts := strings.Split(strings.TrimPrefix(s, argon2idPrefix), "$")
	if !strings.HasPrefix(s, argon2idPrefix) || len(parts) != 4 {
		return h, errors.New(`want $argon2id$v=19$m=…,t=…,p=…$salt$hash`)
	}
	if parts[0] != "v=19" {
		return h, fmt.Errorf("version %q: only v=19 (argon2 1.3) is supported", parts[0])
	}
	var threads uint32
	if n, err := fmt.Sscanf(parts[1], "m=%d,t=%d,p=%d", &h.memory, &h.time, &threads); err != nil || n != 3 || fmt.Sprintf("m=%d,t=%d,p=%d", h.memory, h.time, threads) != parts[1] {
		return h, fmt.Errorf("parameters %q: want m=KiB,t=passes,p=lanes", parts[1])
	}
	switch {
	case threads < 1 || threads > 255:
		return h, fmt.Errorf("p=%d: want 1 to 255 lanes", threads)
	case h.time < 1 || h.time > argon2MaxTime:
		return h, fmt.Errorf("t=%d: want 1 to %d passes", h.time, argon2MaxTime)
	case h.memory < 8*threads || h.memory > argon2MaxMemoryKiB:
		return h, fmt.Errorf("m=%d: want 8 KiB per lane up to %d KiB", h.memory, argon2MaxMemoryKiB)
	}
	h.threads = uint8(threads)
	var err error
	if h.salt, err = base64.RawStdEncoding.Strict().DecodeString(parts[2]); err != nil || len(h.salt) < argon2MinSalt {
		return h, fmt.Errorf("salt: want at least %d bytes in unpadded base64", argon2MinSalt)
	}
	if h.key, err = base64.RawStdEncoding.Strict().DecodeString(parts[3]); err != nil || len(h.key) < argon2MinKey || len(h.key) > argon2MaxKey {
		return h, fmt.Errorf("hash: want %d to %d bytes in unpadded base64", argon2MinKey, argon2MaxKey)
	}
	return h, nil
}

// checkHash reports whether a users file's password_hash is one the
// server can check passwords against. Its errors name the kind of hash
// but not the field.
func checkHash(hash string) error {
	switch {
	case strings.HasPrefix(hash, argon2idPrefix):
		if _, err := parseArgon2id(hash); err != nil {
			return fmt.Errorf("argon2id: %w", err)
		}
		return nil
	case strings.HasPrefix(hash, "$2"):
		if err := checkBcrypt(hash); err != nil {
			return fmt.Errorf("bcrypt: %w", err)
		}
		return nil
	}
	return errors.New("want a bcrypt or argon2id hash (see gostore passwd)")
}

// bcryptAlphabet is the base64 alphabet of bcrypt's salt and hash.
const bcryptAlphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// checkBcrypt checks a bcrypt hash whole: bcrypt.Cost reads only its
// version and cost, and a hash damaged after them (cut short, or a
// character changed in copying) would make every password wrong.
func checkBcrypt(hash string) error {
	if _, err := bcrypt.Cost([]byte(hash)); err != nil {
		return err
	}
	// $2b$10$ then 22 characters of salt and 31 of hash.
	if len(hash) != 60 {
		return fmt.Errorf("%d characters, want 60 ($2b$, the cost, $, 53 of salt and hash)", len(hash))
	}
	switch v := hash[:4]; v {
	case "$2a$", "$2b$", "$2y$":
	default:
		return fmt.Errorf("version %q, want 2a, 2b or 2y", strings.Trim(v, "$"))
	}
	if hash[6] != '$' {
		return fmt.Errorf("cost %q: want two digits", hash[4:7])
	}
	if i := strings.IndexFunc(hash[7:], func(r rune) bool { return !strings.ContainsRune(bcryptAlphabet, r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(hash[7+i:])
		return fmt.Errorf("character %d, %q, is not in bcrypt's base64 alphabet", 8+i, string(r))
	}
	return nil
}

// comparePassword reports, as bcrypt.CompareHashAndPassword does, whether
// password matches hash, a bcrypt or argon2id hash checkHash accepted.
func comparePassword(hash, password []byte) error {
	if !strings.HasPrefix(string(hash), argon2idPrefix) {
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	h, err := parseArgon2id(string(hash))
	if err != nil {
		return err
	}
	key := argon2.IDKey(password, h.salt, h.time, h.memory, h.threads, uint32(len(h.key)))
	if subtle.ConstantTimeCompare(key, h.key) != 1 {
		return bcrypt.ErrMismatchedHashAndPassword
	}
	return nil
}

// HashPassword returns the bcrypt hash of a password for a users file.
func HashPassword(pass string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.DefaultCost)
	return string(h), err
}

// HashPasswordArgon2id returns the argon2id hash of a password for a
// users file, in the PHC string format, with RFC 9106's second
// recommended parameters.
func HashPasswordArgon2id(pass string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pass), salt, argon2Time, argon2Memory, argon2Threads, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%sv=19$m=%d,t=%d,p=%d$%s$%s", argon2idPrefix, argon2Memory, argon2Time, argon2Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}
