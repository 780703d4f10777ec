// Package inspectrule validates and runs inspection rules (Ironic's
// inspection rules, API 1.96): conditions on the data an inspection
// gathered (the inventory and the plugin data) and actions on the node
// when they all hold. It is Ironic master's ironic/common/inspection_rules
// rewritten: the same operators, actions, argument signatures (named
// arguments, or the deprecated positional list), loops with any/all/
// first/last, "!" negation, Python str.format interpolation of
// {inventory[...]}, {plugin_data[...]}, {node.field} and {item}, secrets
// masked as "***", and the same error texts. Beyond Ironic, the node's
// secrets (driver_info passwords and any secret key) read as "******", so
// no rule can copy them where the API would show them.
//
// The core is pure: Validate checks a rule, Apply runs rules on a Target
// (a node and its plugin data, changed in place); the conductor loads
// the rules, saves the node and stores the plugin data.
//
// Conditions: eq, lt, gt, is-empty, in-net, matches, contains, one-of,
// is-none, is-true, is-false, each negated by a leading "!" (Ironic
// defines le, ge and ne but does not register them, so a rule naming them
// is refused as by Ironic: use !gt, !lt and !eq). Interpolation gives
// strings, as Python's str.format does, so an interpolated number compares
// as a string: with another string by code point (!lt of
// "{inventory[memory][physical_mb]}" and "1024" holds for 2048 but not
// for 512), never equal to a JSON number, and not ordered against one at
// all (Python's TypeError, which fails the inspection, as in Ironic).
//
// Actions: fail, log, set-attribute, extend-attribute, del-attribute,
// set-capability, unset-capability, add-trait, remove-trait,
// set-plugin-data, extend-plugin-data, unset-plugin-data.
//
// Not supported, refused when a rule is created (400, saying why):
// set-port-attribute, extend-port-attribute, del-port-attribute (rules do
// not change ports) and api-call (rules make no network calls). Also not
// supported: built-in rules from a file, the mask_secrets setting (secrets
// are always masked), format specs in replacement fields ("{x:>5}" stays
// as written), and Python-only regular expression syntax (lookarounds,
// backreferences: Go's RE2 refuses them as invalid). Rules may not write
// the node fields the conductor owns (uuid, provision and power states,
// traits — use add-trait —, timestamps, allocation_uuid).
package inspectrule
