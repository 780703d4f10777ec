package agentapi

import "testing"

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
