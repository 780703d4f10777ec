package ipa

import (
	"strings"
	"testing"
)

func TestSHA512Crypt(t *testing.T) {
	// Test vectors of Drepper's SHA-crypt specification (default rounds).
	for _, v := range []struct{ pw, salt, want string }{
		// openssl passwd -6 -salt abcdefgh (a password longer than 64 bytes)
		{"pässwörd-long-enough-to-span-more-than-sixty-four-bytes-of-input-yes-indeed-1234", "abcdefgh",
			"$6$abcdefgh$41TeBJK4U6ExMUFptiIA8olPlBiMGXQYEgKhqhu/dtZZT6CLlp1SLvFcrl6AVpXNkUVk2QKsIzqkhbcFW67n41"},
		{"Hello world!", "saltstring", "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"},
	} {
		if got := SHA512Crypt(v.pw, v.salt); got != v.want {
			t.Errorf("SHA512Crypt(%q, %q) = %s, want %s", v.pw, v.salt, got, v.want)
		}
	}
	h := HashRescuePassword("s3cret")
	if !IsCryptHash(h) || h != SHA512Crypt("s3cret", h[3:19]) {
		t.Errorf("HashRescuePassword = %q", h)
	}
}

func TestIsShadowHash(t *testing.T) {
	for s, want := range map[string]bool{
		HashRescuePassword("x"): true,
		// python3 -c 'import crypt; print(crypt.crypt("x", "$5$abcdefgh"))' (Ironic 21.4's default)
		"$5$abcdefgh$sI6g8tHKrJ6RX7w.YoN9B7a/5wK5jYEOMmMnt3tPl0/":              true,
		"$5$rounds=10000$abcdefgh$GqCua8zEceukWnJcsjBleEiqLyW9t816vAEP1MIm521": true,  // rounds=10000
		"$1$abcdefgh$Yp2jmG9p3jF0Q2a7bAfyXs":                                   false, // md5-crypt
		"plain password":                                                       false,
		"$5$abcdefgh$short":                                                    false,
		"$6$salt$" + strings.Repeat("a", 85) + "!":                             false,
		"$5$abcdefghijklmnopq$Yp2jmG9p3jF0Q2a7bAfyXsNk3Rw9oN6P8ZkGfJq2Hn5":     false, // salt over 16
	} {
		if got := IsShadowHash(s); got != want {
			t.Errorf("IsShadowHash(%q) = %v, want %v", s, got, want)
		}
	}
}
