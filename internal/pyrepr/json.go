package pyrepr

import "unicode/utf8"

// AppendJSONString appends s as Python's json.dumps(s) (ensure_ascii=True)
// writes it: quoted, control characters and DEL as \u00XX (\n, \r, \t,
// \b, \f by name), non-ASCII as \uXXXX (surrogate pairs above the BMP),
// invalid UTF-8 as U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = AppendJSONStringBody(b, s)
	return append(b, '"')
}

// AppendJSONStringBody appends the escaped characters of s without the
// quotes. Runs of printable ASCII are copied in one go.
func AppendJSONStringBody(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		start := i
		for i < len(s) && plainASCII[s[i]] {
			i++
		}
		b = append(b, s[start:i]...)
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = appendASCII(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			b = appendU(b, 0xD800+(r>>10))
			b = appendU(b, 0xDC00+(r&0x3FF))
			continue
		}
		b = appendU(b, r)
	}
	return b
}

// plainASCII marks the bytes written as they are.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func appendASCII(b []byte, c byte) []byte {
	switch c {
	case '"':
		return append(b, '\\', '"')
	case '\\':
		return append(b, '\\', '\\')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	if c < 0x20 || c == 0x7f {
		return appendU(b, rune(c))
	}
	return append(b, c)
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}
