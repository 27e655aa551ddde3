package server

import (
	"math/big"
	"strings"
)

// INCRBYFLOAT and HINCRBYFLOAT compute as Redis does, in C's long double
// (x87 80-bit extended precision on the amd64 builds everyone runs), and
// print the sum with "%.17Lf" less its trailing zeros. Doing the sum in
// float64 instead would answer 0.1+0.2 with 0.30000000000000004 where
// Redis answers 0.3, so the arithmetic is emulated with big.Float at
// long double's 64-bit mantissa and exponent range.
const (
	ldPrec   = 64     // mantissa bits of the x87 extended format
	ldMaxExp = 16384  // |x| < 2**16384, else the value is infinite
	ldMinExp = -16445 // smallest subnormal is 2**-16445
)

// errFloatResult is Redis's error for a sum that is not finite.
const errFloatResult = "ERR increment would produce NaN or Infinity"

// parseLongDouble parses s as Redis's string2ld does with strtold: decimal
// or hexadecimal, optionally signed, no surrounding space, finite (an
// infinity parses, so that the sum reports it) and not NaN, and not so
// large or small that strtold reports a range error.
func parseLongDouble(s string) (*big.Float, bool) {
	if s == "" || strings.ContainsAny(s, "_ \t\n\v\f\r") {
		return nil, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return new(big.Float).SetInf(s[0] == '-'), true
	}
	base := 10
	if strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X") {
		base = 0 // big.ParseFloat takes the prefix and a 'p' exponent
	}
	f, _, err := big.ParseFloat(s, base, ldPrec, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	if f.Sign() != 0 {
		if exp := f.MantExp(nil); exp > ldMaxExp || exp < ldMinExp {
			return nil, false
		}
	}
	return f, true
}

// addLongDouble returns cur+by formatted as Redis stores it, or the error
// to reply. cur is the stored value, if found (else the sum starts at 0);
// curErr is the error for a stored value that is not a number, which
// HINCRBYFLOAT words differently from INCRBYFLOAT.
func addLongDouble(cur string, found bool, by, curErr string) (string, string) {
	a := new(big.Float)
	if found {
		var ok bool
		if a, ok = parseLongDouble(cur); !ok {
			return "", curErr
		}
	}
	b, ok := parseLongDouble(by)
	if !ok {
		return "", errNotFloat
	}
	if a.IsInf() || b.IsInf() {
		return "", errFloatResult // inf+x is inf, inf-inf is NaN
	}
	sum := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a, b)
	if sum.Sign() != 0 && sum.MantExp(nil) > ldMaxExp {
		return "", errFloatResult
	}
	s := sum.Text('f', 17)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s, ""
}
