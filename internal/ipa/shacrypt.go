package ipa

import (
	"crypto/rand"
	"crypto/sha512"
	"strings"
)

// The rescue password travels to the agent only as a SHA-512 crypt hash
// ("$6$<salt>$<hash>", Drepper's SHA-crypt with the default 5000 rounds, the
// format of /etc/shadow), as Ironic's hashed_rescue_password does.

const cryptAlphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// HashRescuePassword returns the SHA-512 crypt hash of pw with a random
// 16-character salt.
func HashRescuePassword(pw string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	salt := make([]byte, 16)
	for i, c := range b {
		salt[i] = cryptAlphabet[int(c)%len(cryptAlphabet)]
	}
	return SHA512Crypt(pw, string(salt))
}

// IsShadowHash reports whether s is a SHA-crypt hash the agent can store
// for the rescue user: SHA-512 ("$6$", 86 characters of hash) or SHA-256
// ("$5$", 43), what Ironic's [conductor]rescue_password_hash_algorithm
// produces (sha256 by default in Ironic 21.4), with an optional
// "rounds=N$" field and a salt of at most 16 characters.
func IsShadowHash(s string) bool {
	parts := strings.Split(s, "$")
	if len(parts) == 5 && strings.HasPrefix(parts[2], "rounds=") {
		parts = append(parts[:2], parts[3:]...)
	}
	if len(parts) != 4 || parts[0] != "" || len(parts[2]) == 0 || len(parts[2]) > 16 {
		return false
	}
	want := map[string]int{"5": 43, "6": 86}[parts[1]]
	if want == 0 || len(parts[3]) != want {
		return false
	}
	for _, c := range parts[2] + parts[3] {
		if !strings.ContainsRune(cryptAlphabet, c) {
			return false
		}
	}
	return true
}

// IsCryptHash reports whether s looks like a SHA-512 crypt hash.
func IsCryptHash(s string) bool {
	parts := strings.Split(s, "$")
	return len(parts) == 4 && parts[0] == "" && parts[1] == "6" && len(parts[3]) == 86
}

// SHA512Crypt computes "$6$salt$hash" (5000 rounds; salt cut to 16 bytes).
func SHA512Crypt(password, salt string) string {
	if len(salt) > 16 {
		salt = salt[:16]
	}
	p, s := []byte(password), []byte(salt)
	repeat := func(d []byte, n int) []byte {
		out := make([]byte, 0, n)
		for len(out)+len(d) <= n {
			out = append(out, d...)
		}
		return append(out, d[:n-len(out)]...)
	}

	h := sha512.New()
	h.Write(p)
	h.Write(s)
	h.Write(p)
	alt := h.Sum(nil)

	h.Reset()
	h.Write(p)
	h.Write(s)
	h.Write(repeat(alt, len(p)))
	for n := len(p); n > 0; n >>= 1 {
		if n&1 != 0 {
			h.Write(alt)
		} else {
			h.Write(p)
		}
	}
	a := h.Sum(nil)

	h.Reset()
	for range len(p) {
		h.Write(p)
	}
	pp := repeat(h.Sum(nil), len(p))

	h.Reset()
	for range 16 + int(a[0]) {
		h.Write(s)
	}
	ss := repeat(h.Sum(nil), len(s))

	c := a
	for i := range 5000 {
		h.Reset()
		if i&1 != 0 {
			h.Write(pp)
		} else {
			h.Write(c)
		}
		if i%3 != 0 {
			h.Write(ss)
		}
		if i%7 != 0 {
			h.Write(pp)
		}
		if i&1 != 0 {
			h.Write(c)
		} else {
			h.Write(pp)
		}
		c = h.Sum(nil)
	}

	var out strings.Builder
	out.WriteString("$6$" + salt + "$")
	enc := func(b2, b1, b0 byte, n int) {
		w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
		for range n {
			out.WriteByte(cryptAlphabet[w&0x3f])
			w >>= 6
		}
	}
	for i := range 21 {
		switch i % 3 {
		case 0:
			enc(c[i], c[i+21], c[i+42], 4)
		case 1:
			enc(c[i+21], c[i+42], c[i], 4)
		default:
			enc(c[i+42], c[i], c[i+21], 4)
		}
	}
	enc(0, 0, c[63], 2)
	return out.String()
}
