#ifndef EVCAPTURE_CCONCURRENCYHOOKS_H
#define EVCAPTURE_CCONCURRENCYHOOKS_H

// Swift's runtime hook variables (swift/Runtime/ConcurrencyHooks.def), referenced at link
// time: found in a --static-swift-stdlib executable too, whose dynamic symbol table does not
// list them (dlsym cannot see them there). Each holds a swiftcall function pointer, or NULL.
extern void *_Nullable swift_task_enqueueGlobal_hook;
extern void *_Nullable swift_task_enqueueGlobalWithDelay_hook;
extern void *_Nullable swift_task_enqueueGlobalWithDeadline_hook;
extern void *_Nullable swift_task_enqueueMainExecutor_hook;

/// Sets the four hooks if none is set yet; returns 0 when another hook was in place.
int evc_install_concurrency_hooks(void *_Nonnull global, void *_Nonnull delayed, void *_Nonnull deadline,
                                  void *_Nonnull main);

#endif
