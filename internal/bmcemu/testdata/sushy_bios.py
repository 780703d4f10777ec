"""Drive the BMC emulator's Bios and UpdateService with real sushy.

Usage: sushy_bios.py BMC_URL USER PASSWORD SYSTEM_ID IMAGE_URL
Prints one JSON document of what sushy saw (read by bmcemu's sushy_test.go).
"""
import json
import sys

import sushy
from sushy import auth
import sushy.main

# Debian's python3-sushy ships without its packaged standard message
# registries (sushy/standard_registries/ is missing), which makes every
# registry lookup fail; use the BMC's registries alone.
sushy.main.Sushy._get_standard_message_registry_collection = lambda self: []

url, user, password, system_id, image = sys.argv[1:6]
root = sushy.Sushy(url + '/redfish/v1', auth=auth.BasicAuth(user, password))
system = root.get_system('/redfish/v1/Systems/' + system_id)
out = {'bios_version': system.bios_version}
bios = system.bios
out['attributes'] = bios.attributes
out['apply_times'] = [str(a.value) if hasattr(a, 'value') else str(a)
                      for a in (bios.supported_apply_times or [])]
registry = bios.get_attribute_registry()
out['registry'] = {
    a.name: {'type': a.attribute_type, 'read_only': a.read_only,
             'unique': a.unique, 'reset_required': a.reset_required,
             'values': [v.get('ValueName') for v in (a.allowable_values or [])],
             'lower': a.lower_bound, 'upper': a.upper_bound,
             'min_length': a.min_length, 'max_length': a.max_length}
    for a in registry.registry_entries.attributes} if registry else None
bios.set_attributes({'ProcTurboMode': 'Disabled', 'PowerOnDelay': 30},
                    apply_time=sushy.APPLY_TIME_ON_RESET)
out['pending'] = bios.pending_attributes
bios.reset_bios()

updates = root.get_update_service()
monitor = updates.simple_update(image, targets=[system.path])
monitor.wait(30)
task = monitor.get_task()
out['task_state'] = str(task.task_state.value if hasattr(task.task_state, 'value') else task.task_state)
out['bios_version_after'] = root.get_system(system.path).bios_version
print(json.dumps(out))
