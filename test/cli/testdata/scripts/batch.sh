#!/bin/bash
# Batch operations

action=$1
shift
nodes=("$@")

if [ -z "$action" ] || [ ${#nodes[@]} -eq 0 ]; then
    echo "Usage: $0 <action> <node1> [node2] ..."
    echo "Actions: manage, provide, clean, inspect, maintain, unmaintain"
    exit 1
fi

echo "=== Batch action: $action ==="

for node in "${nodes[@]}"; do
    echo "Node: $node"
    
    case $action in
        "manage")
            anvil node manage "$node"
            ;;
        "provide")
            anvil node provide "$node"
            ;;
        "clean")
            anvil node clean "$node" \
                --clean-steps '[{"interface": "deploy", "step": "erase_devices_metadata"}]'
            ;;
        "inspect")
            anvil node inspect "$node"
            ;;
        "maintain")
            anvil node maintenance set "$node" --reason "Batch maintenance"
            ;;
        "unmaintain")
            anvil node maintenance unset "$node"
            ;;
        *)
            echo "Unknown action: $action"
            continue
            ;;
    esac
    
    if [ $? -eq 0 ]; then
        echo "✅ $node: done"
    else
        echo "❌ $node: failed"
    fi
    
    echo "---"
done

echo "=== Batch done ==="
