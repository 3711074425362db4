#ifndef EVCAPTURE_V4L2_SHIMS_H
#define EVCAPTURE_V4L2_SHIMS_H
#include <linux/videodev2.h>

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

// ---- Frame streaming (Sources/V4L2/Streaming.swift) --------------------------------------
// Pixel formats are function-like macros (v4l2_fourcc), so Swift cannot see them.
static const unsigned int EVC_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
static const unsigned int EVC_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
static const unsigned int EVC_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
// ---- end of frame streaming block --------------------------------------------------------

#endif
