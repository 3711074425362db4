#include "CConcurrencyHooks.h"
#include <stddef.h>

int evc_install_concurrency_hooks(void *global, void *delayed, void *deadline, void *main) {
    if (swift_task_enqueueGlobal_hook || swift_task_enqueueGlobalWithDelay_hook ||
        swift_task_enqueueGlobalWithDeadline_hook || swift_task_enqueueMainExecutor_hook)
        return 0;
    swift_task_enqueueGlobal_hook = global;
    swift_task_enqueueGlobalWithDelay_hook = delayed;
    swift_task_enqueueGlobalWithDeadline_hook = deadline;
    swift_task_enqueueMainExecutor_hook = main;
    return 1;
}
