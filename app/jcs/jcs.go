// Package jcs is the JSON Canonicalization Scheme of RFC 8785: one byte
// sequence for every JSON value, so a hash of it binds the value and not
// its spelling (whitespace, key order, escapes, number forms).
//
// No Go module for it is in the dependency list this project may use, and
// the scheme is small: objects with keys sorted by UTF-16 code units,
// strings with the minimal escapes of RFC 8785 section 3.2.2.2 (unlike
// encoding/json, '<', '>', '&', U+2028 and U+2029 are written as they are),
// and numbers as ECMAScript's Number.prototype.toString writes an IEEE-754
// double.
package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// ErrNumber is a number that has no canonical form: outside the range of
// an IEEE-754 double (I-JSON, RFC 7493).
var ErrNumber = errors.New("jcs: number out of range")

// Canonicalize parses one JSON document and returns its canonical form.
func Canonicalize(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("jcs: parse: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("jcs: parse: more than one JSON value")
	}
	var b bytes.Buffer
	if err := write(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Marshal encodes v with encoding/json and returns the canonical form.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("jcs: marshal: %w", err)
	}
	return Canonicalize(raw)
}

func write(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeString(b, x)
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrNumber, x)
		}
		s, err := FormatNumber(f)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := write(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("jcs: unexpected %T", v)
	}
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785
// section 3.2.3), which differs from Go's byte order for characters above
// U+FFFF against those in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
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
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// FormatNumber writes f as ECMAScript's Number.prototype.toString does
// (ECMA-262 Number::toString, radix 10): the shortest digits that round
// trip, in plain notation for exponents from -6 to 21 and in exponent
// notation ("1e+21", "1.5e-7") outside. NaN and infinities have no JSON form.
func FormatNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%w: %v", ErrNumber, f)
	}
	if f == 0 {
		return "0", nil // -0 too
	}
	var sign string
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits d.ddd and exponent e: f = 0.ddd × 10^n with n = e+1.
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, err := strconv.Atoi(exp)
	if err != nil {
		return "", fmt.Errorf("jcs: format %v: %w", f, err)
	}
	k, n := len(digits), e+1
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		es := "+"
		if n-1 < 0 {
			es = "-"
		}
		abs := n - 1
		if abs < 0 {
			abs = -abs
		}
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		s += "e" + es + strconv.Itoa(abs)
	}
	return sign + s, nil
}
