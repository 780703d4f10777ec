#!/bin/bash
# Deploy a node

NODE_NAME="node-01"
IMAGE_ID="cirros-image"

echo "=== Deploy ==="

# check the node's state
current_state=$(anvil node show $NODE_NAME -f value -c provision_state)
echo "Current state: $current_state"

if [ "$current_state" != "available" ]; then
    echo "Error: the node is not available, it cannot be deployed"
    exit 1
fi

echo "=== Deploying (AVAILABLE → DEPLOYING → ACTIVE) ==="
anvil node deploy $NODE_NAME \
    --instance-info image_source=glance://$IMAGE_ID \
    --instance-info root_gb=20

echo "=== Watching the deploy ==="
while true; do
    state=$(anvil node show $NODE_NAME -f value -c provision_state)
    power_state=$(anvil node power show $NODE_NAME -f value -c power_state)
    
    echo "Provision state: $state, power state: $power_state"
    
    case $state in
        "active")
            echo "✅ Deployed!"
            break
            ;;
        "deploy failed")
            echo "❌ Deploy failed!"
            echo "Last error:"
            anvil node show $NODE_NAME -c last_error
            exit 1
            ;;
        "error")
            echo "❌ The node is in state error!"
            anvil node show $NODE_NAME -c last_error
            exit 1
            ;;
    esac
    
    sleep 0.1
done

echo "=== Result ==="
echo "Node:"
anvil node show $NODE_NAME -c provision_state -c power_state -c instance_uuid

echo "Instance:"
instance_uuid=$(anvil node show $NODE_NAME -f value -c instance_uuid)
if [ -n "$instance_uuid" ]; then
    openstack server show $instance_uuid
fi
