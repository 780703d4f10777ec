#!/bin/bash
# Recover a node from a failure state

NODE_NAME=$1

if [ -z "$NODE_NAME" ]; then
    echo "Usage: $0 <node>"
    exit 1
fi

echo "=== Recovering the node ==="

# check the current state
current_state=$(anvil node show $NODE_NAME -f value -c provision_state)
echo "Current state: $current_state"

# show the last error
echo "=== Last error ==="
anvil node show $NODE_NAME -c last_error

case $current_state in
    "error" | "deploy failed" | "clean failed")
        echo "=== Resetting to MANAGEABLE ==="
        anvil node manage $NODE_NAME
        
        # wait for the state to change
        sleep 0.1
        new_state=$(anvil node show $NODE_NAME -f value -c provision_state)
        echo "New state: $new_state"
        
        if [ "$new_state" = "manageable" ]; then
            echo "✅ Back in MANAGEABLE"
            echo "=== Providing the node again ==="
            anvil node provide $NODE_NAME
        else
            echo "❌ Reset failed: needs an operator"
        fi
        ;;
    "maintenance")
        echo "=== Leaving maintenance ==="
        anvil node maintenance unset $NODE_NAME
        ;;
    *)
        echo "The node is fine: nothing to recover"
        ;;
esac
