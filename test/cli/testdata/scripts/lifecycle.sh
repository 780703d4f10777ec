#!/bin/bash
# Full node lifecycle

NODE_NAME="node-01"
IPMI_IP="fake-bmc.invalid"
IPMI_USER="admin"
IPMI_PASS="password"

echo "=== Step 1: create the node (ENROLL) ==="
anvil node create \
    --driver fake-hardware \
    --name $NODE_NAME \
    --driver-info ipmi_address=$IPMI_IP \
    --driver-info ipmi_username=$IPMI_USER \
    --driver-info ipmi_password=$IPMI_PASS \
    --property cpus=24 \
    --property memory_mb=65536 \
    --property local_gb=500 \
    --property cpu_arch=x86_64

echo "Current state: $(anvil node show $NODE_NAME -f value -c provision_state)"

echo "=== Step 2: manage the node (ENROLL → MANAGEABLE) ==="
anvil node manage $NODE_NAME

# wait for the state to change
while [ "$(anvil node show $NODE_NAME -f value -c provision_state)" = "verifying" ]; do
    echo "Waiting for verification..."
    sleep 0.1
done

echo "Current state: $(anvil node show $NODE_NAME -f value -c provision_state)"

echo "=== Step 3: add the network port ==="
anvil port create \
    --node $NODE_NAME \
    --pxe-enabled \
    00:11:22:33:44:55

echo "=== Step 4: validate the node ==="
anvil node validate $NODE_NAME

echo "=== Step 5: provide the node (MANAGEABLE → AVAILABLE) ==="
anvil node provide $NODE_NAME

# wait for cleaning to finish
while [ "$(anvil node show $NODE_NAME -f value -c provision_state)" = "cleaning" ]; do
    echo "Waiting for cleaning..."
    sleep 0.1
done

echo "Node ready, current state: $(anvil node show $NODE_NAME -f value -c provision_state)"
