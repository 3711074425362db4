#!/bin/sh
# Runs in the test VM (Tests/System/bench/run passes it to Tests/System/run --shell-script):
# every real-kernel figure of BENCHMARKS.md in one boot, floor first, same boot.
# Needs EVC_BENCH_LATENCY, EVC_BENCH_EVCAPTURE and EVC_BENCH_DIR (set by run).
set -u
presses=${EVC_BENCH_PRESSES:-10000}
knob_steps=${EVC_BENCH_KNOB_STEPS:-1000}
daemon_presses=${EVC_BENCH_DAEMON_PRESSES:-50000}
shutter_clicks=${EVC_BENCH_SHUTTER_CLICKS:-20}
shutter_rounds=${EVC_BENCH_SHUTTER_ROUNDS:-4}
status=0
echo "bench: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPU(s), QEMU TCG"

# --- hostile clients (hostile.py): the live view's private memory and the owner's snapshot
# latency against 16 hostile clients of each of five kinds, alternating with quiet blocks in one
# daemon; EVC_BENCH_ONLY=hostile ---
case "${EVC_BENCH_ONLY:-}" in ""|hostile)
echo "bench: === hostile: live view memory and the owner's snapshot latency against hostile clients (one daemon, alternating blocks) ==="
python3 "$EVC_BENCH_DIR_SRC/hostile.py" "$EVC_BENCH_EVCAPTURE" --rounds "${EVC_BENCH_HOSTILE_ROUNDS:-2}" \
    --block "${EVC_BENCH_HOSTILE_BLOCK:-12}" --clients "${EVC_BENCH_HOSTILE_CLIENTS:-16}" \
    ${EVC_BENCH_HOSTILE_KINDS:+--kinds "$EVC_BENCH_HOSTILE_KINDS"} ${EVC_BENCH_HOSTILE_IDLE:+--clients-idle} || status=1
;; esac
[ "${EVC_BENCH_ONLY:-}" = hostile ] && exit $status
# --- end of hostile clients ---

# --- the MJPEG live view against µStreamer (ustreamer.py): CPU per viewer-second and frame ->
# last byte read at 1, 4 and 16 viewers, alternating blocks; EVC_BENCH_ONLY=mjpeg ---
case "${EVC_BENCH_ONLY:-}" in ""|mjpeg)
echo "bench: === mjpeg: the live view against µStreamer on vivid 640x480 YUYV (alternating blocks) ==="
python3 "$EVC_BENCH_DIR_SRC/ustreamer.py" "$EVC_BENCH_EVCAPTURE" --rounds "${EVC_BENCH_MJPEG_ROUNDS:-3}" \
    --block "${EVC_BENCH_MJPEG_BLOCK:-10}" || status=1
;; esac
[ "${EVC_BENCH_ONLY:-}" = mjpeg ] && exit $status
# --- end of MJPEG against µStreamer ---

# --- WebRTC against MJPEG of the same frames (webrtc.py): bytes per viewer-second at 640x480
# and 1280x720, Chromium's own delays, alternating blocks; EVC_BENCH_ONLY=webrtc ---
case "${EVC_BENCH_ONLY:-}" in ""|webrtc)
echo "bench: === webrtc: the page's WebRTC against MJPEG of the same frames on vivid at 5 fps (alternating blocks) ==="
python3 "$EVC_BENCH_DIR_SRC/webrtc.py" "$EVC_BENCH_EVCAPTURE" --rounds "${EVC_BENCH_WEBRTC_ROUNDS:-4}" --sizes "${EVC_BENCH_WEBRTC_SIZES:-640x480,1280x720}" \
    --block "${EVC_BENCH_WEBRTC_BLOCK:-10}" || status=1
;; esac
[ "${EVC_BENCH_ONLY:-}" = webrtc ] && exit $status
# --- end of WebRTC ---

# --- libcamera (libcamera.py): shutter lag on vimc through libcamera, CPU per streaming second
# against libcamera's cam; EVC_BENCH_ONLY=libcamera ---
case "${EVC_BENCH_ONLY:-}" in ""|libcamera)
echo "bench: === libcamera: shutter lag on vimc 360x240; CPU per streaming second against cam (alternating blocks) ==="
python3 "$EVC_BENCH_DIR_SRC/libcamera.py" "$EVC_BENCH_EVCAPTURE" "$EVC_BENCH_DIR/uinput-flood" \
    --clicks "${EVC_BENCH_LIBCAMERA_CLICKS:-20}" --rounds "${EVC_BENCH_LIBCAMERA_ROUNDS:-4}" \
    --seconds "${EVC_BENCH_LIBCAMERA_SECONDS:-10}" || status=1
;; esac
[ "${EVC_BENCH_ONLY:-}" = libcamera ] && exit $status
# --- end of libcamera ---

# --- booths (booth.py): shot -> GPIO edge against a C floor, timelapse drift; EVC_BENCH_ONLY=booth ---
case "${EVC_BENCH_ONLY:-}" in ""|booth)
echo "bench: === booth: shot -> GPIO edge on an emulated CP2112 against a C floor; timelapse drift; vivid 640x480 ==="
python3 "$EVC_BENCH_DIR_SRC/booth.py" "$EVC_BENCH_EVCAPTURE" "$EVC_BENCH_DIR/uinput-flood" "$EVC_BENCH_DIR/gpio-bench" \
    --rounds "${EVC_BENCH_BOOTH_ROUNDS:-4}" --shots "${EVC_BENCH_BOOTH_SHOTS:-40}" --drift-shots "${EVC_BENCH_BOOTH_DRIFT_SHOTS:-100}" || status=1
;; esac
[ "${EVC_BENCH_ONLY:-}" = booth ] && exit $status
# --- end of booths ---

# --- recording: press and knob latency while a video records vs idle, dropped frames
# (recording.py; EVC_BENCH_ONLY=recording runs only this block) ---
case "${EVC_BENCH_ONLY:-}" in ""|recording)
echo "bench: === recording: press and knob latency, idle vs recording (one daemon, alternating blocks), dropped frames ==="
python3 "$EVC_BENCH_DIR_SRC/recording.py" "$EVC_BENCH_EVCAPTURE" "$EVC_BENCH_DIR/uinput-flood" \
    --rounds "${EVC_BENCH_RECORDING_ROUNDS:-10}" --block "${EVC_BENCH_RECORDING_BLOCK:-20}" || status=1
;; esac
[ "${EVC_BENCH_ONLY:-}" = recording ] && exit $status
# --- end of recording ---

# --- press and knob latency with 4 WebRTC viewers vs none (recording.py --load webrtc; the
# viewers in headless Chromium, vivid 640x480 at 5 fps as the other WebRTC figures);
# EVC_BENCH_ONLY=webrtc-viewers ---
case "${EVC_BENCH_ONLY:-}" in ""|webrtc-viewers)
echo "bench: === webrtc-viewers: press and knob latency, no viewer vs ${EVC_BENCH_VIEWERS:-4} WebRTC viewers (one daemon, alternating blocks) ==="
python3 "$EVC_BENCH_DIR_SRC/recording.py" "$EVC_BENCH_EVCAPTURE" "$EVC_BENCH_DIR/uinput-flood" --load webrtc \
    --viewers "${EVC_BENCH_VIEWERS:-4}" --fps 5 --rounds "${EVC_BENCH_VIEWERS_ROUNDS:-6}" --block "${EVC_BENCH_VIEWERS_BLOCK:-20}" || status=1
;; esac
[ "${EVC_BENCH_ONLY:-}" = webrtc-viewers ] && exit $status
# --- end of webrtc-viewers ---

case "${EVC_BENCH_ONLY:-}" in daemon|shutter|rig) ;; *)
if [ "${EVC_BENCH_ONLY:-}" != knob ]; then
echo "bench: === input latency: C floor (libevdev + epoll) ==="
"$EVC_BENCH_DIR/evdev-floor" "$presses" 200 || status=1
echo "bench: === input latency: evcapture ==="
"$EVC_BENCH_LATENCY" keys "$presses" 200 || status=1
echo "bench: === input latency: evcapture, pipeline output on the I/O thread (the daemon's path) ==="
EVC_BENCH_INLINE=1 "$EVC_BENCH_LATENCY" keys "$presses" 200 || status=1
if [ -n "${EVC_BENCH_BASELINE_LATENCY:-}" ]; then
    echo "bench: === input latency: C floor (between the builds) ==="
    "$EVC_BENCH_DIR/evdev-floor" "$presses" 200 || status=1
    echo "bench: === input latency: baseline ==="
    "$EVC_BENCH_BASELINE_LATENCY" keys "$presses" 200 || status=1
    echo "bench: === input latency: baseline, pipeline output on the I/O thread ==="
    EVC_BENCH_INLINE=1 "$EVC_BENCH_BASELINE_LATENCY" keys "$presses" 200 || status=1
fi
echo "bench: === input latency: C floor again (drift check) ==="
"$EVC_BENCH_DIR/evdev-floor" "$presses" 200 || status=1
fi

echo "bench: === knob step → VIDIOC_S_EXT_CTRLS (fake UVC camera) ==="
"$EVCAPTURE_FAKEUVC" > "$TMPDIR/fakeuvc-knob.log" 2>&1 &
cam=$!
node=
for _ in $(seq 150); do
    for d in /sys/class/video4linux/video*; do
        case "$(cat "$d/name" 2>/dev/null)" in "evcapture fake camera"*) [ "$(cat "$d/index")" = 0 ] && node=/dev/${d##*/} ;; esac
    done
    [ -n "$node" ] && break
    sleep 0.1
done
if [ -n "$node" ]; then
    udevadm settle --timeout=10
    sleep 2  # udev's own probes of the new camera (v4l_id) done: GadgetFS drops overlapping requests
    v4l2-ctl -d "$node" --get-ctrl zoom_absolute
    "$EVC_BENCH_DIR/evdev-floor" knob "$node" "$knob_steps" "${EVC_BENCH_KNOB_GAP:-2000}" || status=1
    "$EVC_BENCH_LATENCY" knob "$node" "$knob_steps" "${EVC_BENCH_KNOB_GAP:-2000}" || status=1
    "$EVC_BENCH_DIR/evdev-floor" knob "$node" "$knob_steps" "${EVC_BENCH_KNOB_GAP:-2000}" || status=1
    if [ -n "${EVC_BENCH_BASELINE_LATENCY:-}" ]; then
        echo "bench: === knob: baseline, then the floor and this build again ==="
        "$EVC_BENCH_BASELINE_LATENCY" knob "$node" "$knob_steps" "${EVC_BENCH_KNOB_GAP:-2000}" || status=1
        "$EVC_BENCH_DIR/evdev-floor" knob "$node" "$knob_steps" "${EVC_BENCH_KNOB_GAP:-2000}" || status=1
        "$EVC_BENCH_LATENCY" knob "$node" "$knob_steps" "${EVC_BENCH_KNOB_GAP:-2000}" || status=1
    fi
    echo "bench: fake camera received $(grep -c 'SET_CUR zoom_absolute' "$TMPDIR/fakeuvc-knob.log") zoom SET_CURs, problems: $(grep -c -e ' lost' -e aborted "$TMPDIR/fakeuvc-knob.log")"
else
    echo "bench: the fake camera did not appear"; status=1
fi
kill "$cam"; wait "$cam"
for _ in $(seq 100); do
    found=; for d in /sys/class/video4linux/video*; do case "$(cat "$d/name" 2>/dev/null)" in "evcapture fake camera"*) found=1 ;; esac; done
    [ -z "$found" ] && break
    sleep 0.1
done

;; esac

case "${EVC_BENCH_ONLY:-}" in latency|knob) exit $status ;; esac
case "${EVC_BENCH_ONLY:-}" in shutter|rig) ;; *)
echo "bench: === daemon: start, idle, memory (5 input devices + fake camera) ==="
python3 "$EVC_BENCH_DIR_SRC/daemon.py" "$EVC_BENCH_EVCAPTURE" "$EVC_BENCH_DIR/uinput-flood" --presses "$daemon_presses" \
    --idle-floor "$EVC_BENCH_IDLE_FLOOR" ${EVC_BENCH_EVCAPTURE_SHARED:+--also "$EVC_BENCH_EVCAPTURE_SHARED"} ${EVC_BENCH_BASELINE_EVCAPTURE:+--baseline "$EVC_BENCH_BASELINE_EVCAPTURE"} || status=1
;; esac

[ "${EVC_BENCH_ONLY:-}" = daemon ] && exit $status
if [ "${EVC_BENCH_ONLY:-}" != rig ]; then
echo "bench: === shutter lag: evcapture (on-press, always) and triggerhappy + fswebcam, vivid 640x480 ==="
python3 "$EVC_BENCH_DIR_SRC/shutter.py" "$EVC_BENCH_EVCAPTURE" "$EVC_BENCH_DIR/uinput-flood" \
    --clicks "$shutter_clicks" --rounds "$shutter_rounds" ${EVC_BENCH_SHUTTER_BASELINE:+--baseline "$EVC_BENCH_SHUTTER_BASELINE"} || status=1
fi

[ "${EVC_BENCH_ONLY:-}" = shutter ] && exit $status
echo "bench: === many stations: press on a -> trigger on b and c, against mosquitto's publish -> receive; frame spread ==="
for mode in ${EVC_BENCH_RIG_MODES:-solo messaging full first}; do
    python3 "$EVC_BENCH_DIR_SRC/rig.py" "$EVC_BENCH_EVCAPTURE" "$EVC_BENCH_DIR/uinput-flood" "$EVC_BENCH_DIR/mqtt-floor" \
        --mode "$mode" --rounds "${EVC_BENCH_RIG_ROUNDS:-6}" --per-block "${EVC_BENCH_RIG_PER_BLOCK:-10}" || status=1
done
exit $status
