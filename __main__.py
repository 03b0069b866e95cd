import gc

import pulumi

from components import GpuPlatform, GpuPlatformArgs
from components.kubernetes.fleet_manager import FLEET_KUBECONFIG_OUTPUT
from gpuplat.compile import SpecError, UnknownStackError, load_for_stack

# The cycle collector stays off for the program's run, as in `gpuplat preview`'s recording: the
# SDK allocates thousands of objects per resource, most after this file returns (the language host
# then sends the registrations), and each full collection walks every live one. Reference
# counting frees them; the process ends with the deployment (docs/e2e.md measures it).
gc.disable()

try:
    model, plan = load_for_stack(pulumi.get_stack())
except (SpecError, UnknownStackError) as err:
    # The diagnostics say where the spec is wrong; a traceback would only bury them.
    raise pulumi.RunError(str(err)) from None
platform = GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))
if platform.fleet_credentials is not None:  # a fleet worker: what its manager's StackReference reads
    pulumi.export(FLEET_KUBECONFIG_OUTPUT, platform.fleet_credentials)
