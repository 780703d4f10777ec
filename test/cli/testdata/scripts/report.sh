#!/bin/bash
# Cluster report

echo "=== Ironic cluster report ==="
echo "Generated: $(date)"
echo

echo "=== Node counts ==="
echo "Total nodes: $(anvil node list -f value | wc -l)"
echo

# count by state
echo "By state:"
anvil node list -f value -c "Provision State" | sort | uniq -c | while read count state; do
    printf "  %-15s: %d\n" "$state" "$count"
done

echo

echo "=== Nodes ==="
anvil node list -c Name -c "Provision State" -c "Power State" -c "Maintenance"

echo

echo "=== Problem nodes ==="

# nodes in state error
error_nodes=$(anvil node list -f value -c Name --provision-state error)
if [ -n "$error_nodes" ]; then
    echo "❌ Nodes in state error:"
    echo "$error_nodes" | while read node; do
        echo "  - $node"
        anvil node show "$node" -f value -c last_error | sed 's/^/    error: /'
    done
else
    echo "✅ No node in state error"
fi

echo

# nodes in maintenance
maintenance_nodes=$(anvil node list -f value -c Name --maintenance)
if [ -n "$maintenance_nodes" ]; then
    echo "🔧 Nodes in maintenance:"
    echo "$maintenance_nodes" | while read node; do
        reason=$(anvil node show "$node" -f value -c maintenance_reason)
        echo "  - $node (reason: $reason)"
    done
else
    echo "✅ No node in maintenance"
fi

echo

echo "=== Power check ==="
anvil node list -f value -c Name | while read node; do
    power_state=$(anvil node power show "$node" -f value -c power_state 2>/dev/null)
    if [ "$power_state" = "ERROR" ]; then
        echo "❌ $node: power state ERROR"
    fi
done

echo

echo "=== Conductors ==="
anvil conductor list
