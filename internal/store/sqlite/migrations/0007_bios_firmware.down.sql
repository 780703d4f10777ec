DROP TABLE firmware_components;
DROP TABLE bios_settings;
