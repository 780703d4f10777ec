package inspectrule

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
)

// evaluate runs condition operator op on its arguments (Ironic's
// operators.py, one case per operator class).
func evaluate(op string, a map[string]any) (bool, error) {
	switch op {
	case "eq", "lt", "gt", "le", "ge", "ne":
		return simple(op, a["values"], a["force_strings"])
	case "is-empty":
		switch pyStr(a["value"]) {
		case "", "None", "[]", "{}":
			return true, nil
		}
		return false, nil
	case "in-net":
		return inNet(a["address"], a["subnet"])
	case "is-true":
		return isTrue(a["value"]), nil
	case "is-false":
		return isFalse(a["value"]), nil
	case "is-none":
		return a["value"] == nil, nil
	case "one-of":
		values, ok := a["values"]
		if !ok {
			values = []any{}
		}
		return pyIn(a["value"], values)
	case "matches", "contains":
		return regexOp(op, a["value"], a["regex"])
	}
	return false, fmt.Errorf("Unsupported operator: '%s'.", op)
}

// simple is Ironic's SimpleOperator: every consecutive pair of values
// compares true (fewer than two values: true).
func simple(op string, values, forceStrings any) (bool, error) {
	list, ok := unmask(values).([]any)
	if !ok {
		return false, conditionFailure(fmt.Sprintf("Failed to check condition: '%s' on values: %s: Expected list for 'values', got: %s",
			op, pyStr(values), pyType(values)))
	}
	if len(list) < 2 {
		return true, nil
	}
	if pyTruth(forceStrings) {
		strs := make([]any, len(list))
		for i, v := range list {
			strs[i] = pyStr(v)
		}
		list = strs
	}
	for i := 0; i+1 < len(list); i++ {
		ok, err := pyCompare(op, list[i], list[i+1])
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// isTrue is Ironic's IsTrueOperator.
func isTrue(v any) bool {
	switch x := unmask(v).(type) {
	case bool:
		return x
	case string:
		s := strings.ToLower(x)
		return s == "yes" || s == "true"
	case float64, int, int64:
		n, _ := pyNumber(x)
		return n != 0
	}
	return false
}

// isFalse is Ironic's IsFalseOperator.
func isFalse(v any) bool {
	switch x := unmask(v).(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		s := strings.ToLower(x)
		return s == "no" || s == "false"
	case float64, int, int64:
		n, _ := pyNumber(x)
		return n == 0
	}
	return false
}

// inNet is Ironic's NetOperator (netaddr): a subnet is a CIDR or a single
// address; an address outside the subnet's family is not in it.
func inNet(address, subnet any) (bool, error) {
	sub, _ := subnet.(string)
	prefix, err := netip.ParsePrefix(strings.TrimSpace(sub))
	if err != nil {
		addr, aerr := netip.ParseAddr(strings.TrimSpace(sub))
		if aerr != nil {
			return false, executionFailure(fmt.Sprintf("invalid value: invalid IPNetwork %s", pyStr(subnet)))
		}
		prefix = netip.PrefixFrom(addr, addr.BitLen())
	}
	text, _ := address.(string)
	ip := net.ParseIP(strings.TrimSpace(text))
	if ip == nil {
		return false, fmt.Errorf("failed to detect a valid IP address from %s", pyStr(address))
	}
	addr, _ := netip.AddrFromSlice(ip)
	addr = addr.Unmap()
	return prefix.Masked().Contains(addr), nil
}

// regexOp is Ironic's MatchesOperator (the whole value, from its start)
// and ContainsOperator (anywhere). Go's RE2 syntax is Python's without
// backreferences and lookarounds: such a regex is invalid here.
func regexOp(op string, value, regex any) (bool, error) {
	re, ok := regex.(string)
	if !ok {
		return false, fmt.Errorf("first argument must be string or compiled pattern")
	}
	if _, err := regexp.Compile(re); err != nil {
		return false, executionFailure("invalid regular expression: " + err.Error())
	}
	if op == "matches" {
		if re == "" {
			return false, fmt.Errorf("string index out of range")
		}
		if !strings.HasSuffix(re, "$") {
			re += "$"
		}
		re = "^(?:" + re + ")"
	}
	compiled, err := regexp.Compile(re)
	if err != nil {
		return false, executionFailure("invalid regular expression: " + err.Error())
	}
	return compiled.MatchString(pyStr(value)), nil
}
