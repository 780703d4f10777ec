-- A node's cached BIOS settings (Ironic's bios_settings, API 1.40/1.74)
-- and firmware components (Ironic's firmware_information, API 1.86): the
-- JSON of the model in data, keyed by node and name; they go with the node.
CREATE TABLE bios_settings (
    node_uuid  TEXT        COLLATE "C" NOT NULL REFERENCES nodes (uuid) ON DELETE CASCADE,
    name       TEXT        COLLATE "C" NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ,
    data       JSONB       NOT NULL,
    PRIMARY KEY (node_uuid, name)
);

CREATE TABLE firmware_components (
    node_uuid  TEXT        COLLATE "C" NOT NULL REFERENCES nodes (uuid) ON DELETE CASCADE,
    component  TEXT        COLLATE "C" NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ,
    data       JSONB       NOT NULL,
    PRIMARY KEY (node_uuid, component)
);
