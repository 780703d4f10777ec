// Package docs holds no code: its tests keep Anvil's documentation honest.
// They fail when a package under internal/ or pkg/ is not named in
// docs/ARCHITECTURE.md, when README.md stops being a front door (at most
// 300 lines, the test command on its first screen), and when a relative
// link in README.md or docs/*.md does not resolve to a file (and, for a
// Markdown file, to one of its headings).
package docs
