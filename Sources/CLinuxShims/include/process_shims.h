// ---- Files and processes for the actions (Sources/Bridge/Actions) ------------------------
// glibc declares pipe2 and renameat2 only under _GNU_SOURCE, which Swift's Glibc module
// does not define; the raw system calls need no feature macro.
#ifndef EVCAPTURE_PROCESS_SHIMS_H
#define EVCAPTURE_PROCESS_SHIMS_H
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <spawn.h>

/// The child closes every descriptor from `from` up, after its other file actions (glibc 2.34;
/// declared by spawn.h only under feature macros Swift's Glibc module does not set).
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
static inline int evc_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
/// The child changes to `directory` before it executes (glibc 2.29; declared under the same
/// feature macros).
extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *directory);
static inline int evc_spawn_chdir(posix_spawn_file_actions_t *actions, const char *directory) {
    return posix_spawn_file_actions_addchdir_np(actions, directory);
}

/// pipe2(fds, O_CLOEXEC): both ends close-on-exec atomically, so a child spawned by another
/// thread at the same moment never inherits them.
static inline int evc_pipe_cloexec(int fds[2]) { return (int)syscall(SYS_pipe2, fds, O_CLOEXEC); }

/// renameat2(RENAME_NOREPLACE): fails with EEXIST instead of replacing `to`.
static inline int evc_rename_noreplace(const char *from, const char *to) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1u /* RENAME_NOREPLACE */);
}
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
/// pidfd_open(pid, 0) (Linux 5.3): a descriptor that polls readable once the child exits, so a
/// wait for a child and its output is one poll with no timer. -1 with errno on older kernels.
static inline int evc_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0u); }
#include <sys/socket.h>
/// accept4(fd, SOCK_NONBLOCK | SOCK_CLOEXEC): a client socket no spawned child inherits.
static inline int evc_accept_nonblock_cloexec(int fd) {
    return (int)syscall(SYS_accept4, fd, (void *)0, (void *)0, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
#include <sys/prctl.h>
/// prctl(PR_SET_NAME): names the calling thread (16 bytes with the NUL; longer is cut).
/// prctl is variadic, which Swift cannot call.
static inline int evc_set_thread_name(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }
#include <sched.h>
/// sched_setscheduler(0, SCHED_IDLE): the calling thread runs only when no other thread of
/// the normal class wants the CPU, and one that wakes takes the CPU from it at once (threads
/// it starts inherit it). SCHED_IDLE is declared only under _GNU_SOURCE; the value is Linux's.
static inline int evc_set_thread_idle_policy(void) {
    struct sched_param param = {0};
    return (int)syscall(SYS_sched_setscheduler, 0, 5 /* SCHED_IDLE */, &param);
}
/// sched_getscheduler(0): the calling thread's policy (SCHED_IDLE is 5), -1 with errno.
static inline int evc_thread_policy(void) { return (int)syscall(SYS_sched_getscheduler, 0); }
/// prctl(PR_SET_THP_DISABLE): no transparent huge pages for this process and its children.
static inline int evc_disable_transparent_huge_pages(void) { return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }
#endif
// ---- end of actions block ----------------------------------------------------------------
