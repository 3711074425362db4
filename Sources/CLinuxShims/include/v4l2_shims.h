#ifndef EVCAPTURE_V4L2_SHIMS_H
#define EVCAPTURE_V4L2_SHIMS_H
#include <linux/videodev2.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

static const unsigned long EVC_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long EVC_VIDIOC_QUERY_EXT_CTRL = VIDIOC_QUERY_EXT_CTRL;
static const unsigned long EVC_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;
static const unsigned long EVC_VIDIOC_G_EXT_CTRLS = VIDIOC_G_EXT_CTRLS;
static const unsigned long EVC_VIDIOC_S_EXT_CTRLS = VIDIOC_S_EXT_CTRLS;
static const unsigned long EVC_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
static const unsigned long EVC_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
static const unsigned long EVC_VIDIOC_SUBSCRIBE_EVENT = VIDIOC_SUBSCRIBE_EVENT;
static const unsigned long EVC_VIDIOC_UNSUBSCRIBE_EVENT = VIDIOC_UNSUBSCRIBE_EVENT;
static const unsigned long EVC_VIDIOC_DQEVENT = VIDIOC_DQEVENT;
static const unsigned long EVC_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long EVC_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long EVC_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long EVC_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long EVC_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long EVC_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long EVC_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long EVC_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long EVC_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
static const unsigned long EVC_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long EVC_VIDIOC_S_PARM = VIDIOC_S_PARM;

/// `v4l2_event.u.ctrl` (an anonymous union member Swift imports awkwardly).
static inline const struct v4l2_event_ctrl *evc_v4l2_event_ctrl(const struct v4l2_event *e) { return &e->u.ctrl; }

/// `VIDIOC_G_EXT_CTRLS` / `VIDIOC_S_EXT_CTRLS` for one integer-like control, as the current
/// value (`V4L2_CTRL_WHICH_CUR_VAL`). `struct v4l2_ext_control` is packed and its value union
/// sits at a misaligned offset, which Swift cannot import, so the struct is built here.
/// `is64` selects `value64` (V4L2_CTRL_TYPE_INTEGER64) over `value`. One ioctl, no retry:
/// returns -1 with errno set; on success `*value` holds what the kernel returned.
static inline int evc_v4l2_ext_ctrl(int fd, unsigned long request, uint32_t id, int is64, int64_t *value) {
    struct v4l2_ext_control ctrl;
    struct v4l2_ext_controls ctrls;
    memset(&ctrl, 0, sizeof ctrl);
    memset(&ctrls, 0, sizeof ctrls);
    ctrl.id = id;
    if (is64) ctrl.value64 = *value; else ctrl.value = (int32_t)*value;
    ctrls.which = V4L2_CTRL_WHICH_CUR_VAL;
    ctrls.count = 1;
    ctrls.controls = &ctrl;
    int rc = ioctl(fd, request, &ctrls);
    if (rc == 0) *value = is64 ? ctrl.value64 : (int64_t)ctrl.value;
    return rc;
}

/// `VIDIOC_QUERYMENU` (`struct v4l2_querymenu` is packed). Fills `name` (32 bytes, for menus)
/// and `value` (for integer menus). One ioctl, no retry: -1 with errno set (EINVAL for an
/// index the menu skips).
static inline int evc_v4l2_querymenu(int fd, uint32_t id, uint32_t index, char name[32], int64_t *value) {
    struct v4l2_querymenu q;
    memset(&q, 0, sizeof q);
    q.id = id;
    q.index = index;
    int rc = ioctl(fd, VIDIOC_QUERYMENU, &q);
    if (rc == 0) {
        memcpy(name, q.name, 32);
        name[31] = 0;
        *value = q.value;
    }
    return rc;
}

// ---- Frame streaming (Sources/V4L2/Streaming.swift) --------------------------------------
// Pixel formats are function-like macros (v4l2_fourcc), so Swift cannot see them.
static const unsigned int EVC_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
static const unsigned int EVC_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
static const unsigned int EVC_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
// ---- end of frame streaming block --------------------------------------------------------

#endif
