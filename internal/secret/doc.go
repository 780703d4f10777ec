// Package secret decides what is a secret and hides it: the one masking
// used for API responses, logs, events, error texts and the CLI's --debug
// output.
//
// It follows oslo.utils' strutils, which Ironic uses to render nodes: a
// dict key containing one of _SANITIZE_KEYS holds a secret
// (mask_dict_password), and inside any other string, "password=...",
// "--password ...", `"token": "..."` and the like are masked
// (mask_password). Beyond oslo it masks credential-like keys (any key
// with a word such as pass, passwd, pwd, token, secret, credential(s);
// any key ending in "_key" or holding key contents), the password of
// credentials in URLs (scheme://user:password@host) and Authorization-style
// headers. DSN and WithoutDSN mask a database connection string, and an
// error quoting it, for start-up lines and exit errors.
//
// The mask is Ironic's "******". Masking is idempotent and never fails.
package secret
