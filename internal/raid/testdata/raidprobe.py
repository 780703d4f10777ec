import json, sys
from ironic.common import raid, exception
schema = json.load(open('/usr/lib/python3/dist-packages/ironic/drivers/raid_config_schema.json'))
cases = [
 {},
 {"foo": 1},
 {"logical_disks": []},
 {"logical_disks": "x"},
 {"logical_disks": [1]},
 {"logical_disks": [{}]},
 {"logical_disks": [{"raid_level": "1"}]},
 {"logical_disks": [{"size_gb": 10}]},
 {"logical_disks": [{"raid_level": "7", "size_gb": 10}]},
 {"logical_disks": [{"raid_level": 1, "size_gb": 10}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": "100"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": -1}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 1.5}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10.0}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": True}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "bogus": 1}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "bogus": 1, "zed": 2}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "physical_disks": ["a","b"]}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": "c", "physical_disks": [{}]}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": "c", "physical_disks": [1]}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": "c", "physical_disks": "x"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "number_of_physical_disks": 0}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "number_of_physical_disks": "2"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "is_root_volume": "yes"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "share_physical_disks": 1}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "disk_type": "nvme"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "interface_type": "usb"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "volume_name": 5}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": 5}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "is_root_volume": True}, {"raid_level": "0", "size_gb": "MAX", "is_root_volume": True}]},
 {"logical_disks": [{"raid_level": "7", "size_gb": "x"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "bogus": 1, "disk_type":"x"}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10}, {"raid_level": "9", "size_gb": 10}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10}], "x": 1},
 {"logical_disks": [], "x": 1},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "volume_name": "caf\u00e9 'q\"", "bogus": None}]},
 {"logical_disks": [{"raid_level": "5+0", "size_gb": "MAX", "controller":"RAID.Integrated.1-1", "physical_disks":["a","b"], "volume_name":"v", "is_root_volume": True, "share_physical_disks": False, "disk_type":"ssd", "interface_type":"sas","number_of_physical_disks":3}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": "c", "physical_disks": [{"a":1}]}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": "c", "physical_disks": [{"a":1},{"b":2}]}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": "c", "physical_disks": []}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "controller": "c", "physical_disks": ["a", {}]}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "number_of_physical_disks": 2.5}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "number_of_physical_disks": True}]},
 {"logical_disks": [{"raid_level": None, "size_gb": None}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 10, "disk_type": None}]},
 {"logical_disks": [{"raid_level": "1", "size_gb": 12345678901234567890}]},
]
out = []
for c in cases:
    try:
        raid.validate_configuration(c, schema)
        msg = None
    except exception.InvalidParameterValue as e:
        msg = str(e)
    out.append({"config": c, "error": msg})
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
