#!/bin/sh
# The package tests, run as root in the Debian test VM (systemd as PID 1, systemd-udevd)
# by evc-guest-run; Tests/System/lib/pkgvm.py wrote /out/plan.env ($EVC_DEB1, $EVC_DEB2:
# two versions of the package, host paths seen under /host; $EVC_FAKEUVC, $EVC_REPO).
# The tests run in order on one system (install, use, upgrade, remove, purge): each prints
# "pkgtest: ok NAME" or "pkgtest: FAILED NAME: why" and appends {"name","status"} to
# /out/results.jsonl; a test that fails does not stop the later ones.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 SYSTEMD_PAGER=cat
results=/out/results.jsonl
: >"$results"
work=/run/evc
mkdir -p "$work"
fixtures=/host$EVC_REPO/Tests/Fixtures
state=/var/lib/evcapture
sock=/run/evcapture/evcapture.sock
failures=0

say() { echo "pkgtest: $*"; }
die() { echo "pkgtest:   $*"; exit 1; }
# test NAME FUNCTION: runs FUNCTION in a subshell with set -e; its output goes to the console
test_case() {
  name=$1
  say "--- $name"
  (set -e; "$2")
  rc=$?
  if [ "$rc" = 0 ]; then
    say "ok $name"
    echo "{\"name\":\"$name\",\"status\":\"passed\"}" >>"$results"
  else
    say "FAILED $name (status $rc)"
    echo "{\"name\":\"$name\",\"status\":\"failed\"}" >>"$results"
    failures=$((failures + 1))
    journalctl -u evcapture --no-pager -n 30 -o short-monotonic | sed 's/^/pkgtest:   journal: /'
  fi
}
# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds
wait_for() {
  _wf_limit=$(( $1 * 5 )); shift  # (sh has no locals: names of their own)
  _wf_n=0
  while ! "$@" >/dev/null 2>&1; do
    _wf_n=$((_wf_n + 1)); [ "$_wf_n" -ge "$_wf_limit" ] && return 1
    sleep 0.2
  done
}
# the daemon's JSON lines from its socket, as root, from now on, into $work/socket.log
follow_socket() {
  if [ -n "${socat_pid:-}" ]; then kill "$socat_pid" 2>/dev/null || true; fi  # (it ends by itself when the daemon restarts)
  : >"$work/socket.log"
  wait_for 20 test -S "$sock" || die "no socket $sock"
  socat -u "UNIX-CONNECT:$sock" - >>"$work/socket.log" 2>"$work/socat.err" &
  socat_pid=$!
  sleep 0.5
}
socket_has() { grep -q -- "$1" "$work/socket.log"; }
expect_line() {  # expect_line SECONDS PATTERN: a socket line matching PATTERN arrives
  wait_for "$1" socket_has "$2" || { sed 's/^/pkgtest:   socket: /' "$work/socket.log" | tail -20; die "no socket line matching $2 within $1 s"; }
}
# device FIXTURE: a uinput device from Tests/Fixtures/FIXTURE.evemu (kept until the end)
device() {
  evemu-device "$fixtures/$1.evemu" >"$work/dev-$1.txt" 2>&1 &
  wait_for 20 grep -q /dev/input/event "$work/dev-$1.txt" || die "evemu-device $1 made no device"
  grep -o '/dev/input/event[0-9]*' "$work/dev-$1.txt" | head -1
}
key() { evemu-event "$1" --type EV_KEY --code "$2" --value "$3" --sync; }
# click NODE: KEY_VOLUMEDOWN (0x72) pressed and released 100 ms apart, timed inside one
# process (evemu-play): two evemu-event runs on a starved guest were seen 600-760 ms apart,
# which the daemon rightly took for a long press
click() {
  printf 'E: 0.000001 0001 0072 0001\nE: 0.000001 0000 0000 0000\nE: 0.100001 0001 0072 0000\nE: 0.100001 0000 0000 0000\n' \
    | evemu-play "$1"
}
main_pid() { systemctl show -P MainPID evcapture.service; }
video_node() {  # video_node NAME: the first /dev/videoN whose V4L2 name starts with NAME
  for _vn in /sys/class/video4linux/video*; do
    case "$(cat "$_vn/name" 2>/dev/null)" in "$1"*) echo "/dev/${_vn##*/}"; return 0 ;; esac
  done
  return 1
}
restart_service() {
  systemctl restart evcapture.service || die "systemctl restart failed"
  [ "$(systemctl show -P ActiveState evcapture.service)" = active ] || die "not active after restart"
  follow_socket
}

# ---- the lab: the fake UVC camera (controls) and vivid (frames)
mkdir -p /dev/gadget && mount -t gadgetfs gadgetfs /dev/gadget
"/host$EVC_FAKEUVC" >"$work/fakeuvc.log" 2>&1 &
wait_for 60 video_node "evcapture fake camera" || { say "the fake camera did not appear:"; sed 's/^/pkgtest:   /' "$work/fakeuvc.log"; }
camera=$(video_node "evcapture fake camera" || true)
vivid=$(video_node vivid-000-vid-cap || true)
say "lab: fake camera $camera, vivid $vivid, $(nproc) CPU, $(free -m | awk '/Mem:/{print $2}') MiB"
cp "/host$EVC_DEB1" "/host$EVC_DEB2" "$work/"
deb1=$work/${EVC_DEB1##*/} deb2=$work/${EVC_DEB2##*/}

t_install() {
  dpkg -i "$deb1" </dev/null
  [ "$(systemctl is-enabled evcapture.service)" = enabled ] || die "not enabled"
  # Type=notify: systemctl start (from postinst) returns once READY=1 came; active means it did
  [ "$(systemctl show -P Type evcapture.service)" = notify ] || die "not Type=notify"
  [ "$(systemctl show -P ActiveState evcapture.service)" = active ] || die "not active: $(systemctl status evcapture --no-pager)"
  [ "$(ps -o user= -p "$(main_pid)")" = evcapture ] || die "not running as evcapture: $(ps -o user=,args= -p "$(main_pid)")"
  for g in evcapture input video audio; do id -nG evcapture | tr ' ' '\n' | grep -qx "$g" || die "evcapture is not in group $g: $(id evcapture)"; done
  [ -d "$state" ] && [ "$(stat -c %U "$state")" = evcapture ] || die "no $state owned by evcapture"
  say "  $(systemctl show -p MainPID -p ActiveState -p SubState -p NRestarts evcapture.service | tr '\n' ' ')"
}

t_udev_hotplug() {
  follow_socket
  for f in gpio-keys-volume-keys griffin-powermate bluez-avrcp-headset rotary-encoder-rel-x rotary-encoder-push-switch-gpio-keys; do
    node=$(device "$f")
    echo "$node" >"$work/node-$f"
    expect_line 20 "\"change\":\"added\".*\"node\":\"$node\""
  done
  udevadm settle
  dial=$(cat "$work/node-griffin-powermate") headset=$(cat "$work/node-bluez-avrcp-headset")
  # roles of known devices are evcapture's own; the rules give access
  udevadm info -q property -n "$dial" | grep -q '^EVCAPTURE_ROLE=' && die "the shipped rules gave the PowerMate a role"
  udevadm info -q property -n "$dial" | grep -q '^TAGS=.*:uaccess:' || die "the PowerMate is not tagged uaccess"
  udevadm info -q property -n "$headset" | grep -q '^TAGS=.*:uaccess:' || die "the headset is not tagged uaccess"
  [ "$(stat -c %G:%a "$dial")" = input:660 ] || die "$dial is $(stat -c %G:%a "$dial"), not input:660"
  [ "$(stat -c %G:%a "$camera")" = video:660 ] || die "$camera is $(stat -c %G:%a "$camera"), not video:660"
  grep -q "\"node\":\"$dial\".*\"REL_DIAL\":\"slider\"" "$work/socket.log" || die "the daemon did not give the dial's REL_DIAL the slider role"
}

# The goal: at most 12 MB (12288 kB) of private memory with five input devices and a camera,
# in steady state, measured after presses and a dial turn have gone through the pipeline, the
# controls and the camera. Private memory is what the daemon costs the machine: smaps_rollup's
# Anonymous (heap, stacks, and the pages of private file mappings it wrote to, which become
# anonymous). Code and read-only data are clean file pages the kernel reclaims by itself.
# EVC_PRIVATE_LIMIT_KB overrides the limit.
private_limit_kb=${EVC_PRIVATE_LIMIT_KB:-12288}
t_memory() {
  # five input devices (t_udev_hotplug) and the camera, default config (the ring tries the
  # fake camera, which cannot stream: one error line, no frames kept)
  [ -n "$camera" ] || die "no camera"
  grep -q '"event":"session","state":"started"\|"camera-added"' "$work/socket.log" || sleep 2
  sleep 2
  dial=$(cat "$work/node-griffin-powermate") keys=$(cat "$work/node-gpio-keys-volume-keys")
  for _ in 1 2 3; do
    evemu-event "$dial" --type EV_REL --code REL_DIAL --value 1 --sync; sleep 0.2
  done
  expect_line 20 '"event":"control"'
  key "$keys" KEY_VOLUMEUP 1; sleep 0.1; key "$keys" KEY_VOLUMEUP 0
  expect_line 20 '"phase":"ended"'
  sleep 2
  pid=$(main_pid)
  private=$(awk '/^Anonymous:/{print $2}' "/proc/$pid/smaps_rollup")
  dirty=$(awk '/^Private_Dirty:/{print $2}' "/proc/$pid/smaps_rollup")
  rss=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status")
  [ -n "$private" ] || die "no Anonymous line in /proc/$pid/smaps_rollup"
  say "  private memory of evcapture after presses and a dial turn: $private kB (Private_Dirty $dirty kB; resident $rss kB)"
  echo "{\"private_kb\":$private,\"private_dirty_kb\":$dirty,\"rss_kb\":$rss}" >/out/memory.json
  [ "$private" -le "$private_limit_kb" ] || die "private memory $private kB > $private_limit_kb kB (the 12 MB goal)"
}

t_photo() {
  cp /etc/evcapture/config.toml "$work/config.orig"
  cat >>/etc/evcapture/config.toml <<CONF

# edited by the package tests
[camera]
device = "$camera"
capture-device = "$vivid"
width = 320
height = 240

[[hooks]]
name = "env"
argv = ["/bin/sh", "-c", "env >$state/hook-\$EVCAPTURE_PRESS.env"]
on = ["click"]
CONF
  cp /etc/evcapture/config.toml "$work/config.edited"
  evcapture check-config /etc/evcapture/config.toml
  restart_service
  keys=$(cat "$work/node-gpio-keys-volume-keys")
  # (the session may have started before the socket was followed: no line to wait for)
  sleep 2
  click "$keys"
  expect_line 60 '"action":"photo"'
  file=$(grep '"action":"photo"' "$work/socket.log" | head -1 | sed 's/.*"file":"\([^"]*\)".*/\1/')
  case $file in "$state"/*.jpg) ;; *) die "the photo $file is not in $state" ;; esac
  [ "$(stat -c %U "$file")" = evcapture ] || die "$file is not owned by evcapture"
  [ "$(head -c 2 "$file" | od -An -tx1 | tr -d ' ')" = ffd8 ] || die "$file is not a JPEG"
  say "  photo $file ($(stat -c %s "$file") bytes)"
}

t_hook_and_sound() {
  expect_line 20 '"action":"hook"'
  grep '"action":"hook"' "$work/socket.log" | grep -q 'exited(0)\|"result":"exit 0\|status 0\|success' \
    || say "  hook line: $(grep '"action":"hook"' "$work/socket.log" | head -1)"
  ls "$state"/hook-*.env >/dev/null 2>&1 || die "the hook wrote no $state/hook-*.env"
  grep -q '^EVCAPTURE_GESTURE=click' "$state"/hook-*.env || die "the hook's environment has no EVCAPTURE_GESTURE=click"
  headset=$(cat "$work/node-bluez-avrcp-headset")
  key "$headset" KEY_PLAYCD 1; sleep 0.1; key "$headset" KEY_PLAYCD 0
  expect_line 20 '"action":"sound"'
  sleep 1.5
  if grep -q '"event":"error".*sound' "$work/socket.log"; then die "sound error: $(grep '"event":"error"' "$work/socket.log")"; fi
  journalctl -u evcapture --no-pager | grep -i 'aplay\|sound' | tail -3 | sed 's/^/pkgtest:   /'
}

t_monitor_group() {
  id alice >/dev/null 2>&1 || useradd --create-home --groups evcapture alice
  id bob >/dev/null 2>&1 || useradd --create-home bob
  if runuser -u bob -- timeout 10 evcapture monitor >"$work/bob.log" 2>&1; then die "bob (not in group evcapture) could read the socket"; fi
  grep -qi 'permission denied\|EACCES' "$work/bob.log" || die "bob was refused, but not for permission: $(cat "$work/bob.log")"
  runuser -u alice -- timeout 30 evcapture monitor >"$work/alice.log" 2>&1 &
  sleep 2
  keys=$(cat "$work/node-gpio-keys-volume-keys")
  click "$keys"
  wait_for 20 grep -q 'photo' "$work/alice.log" || die "alice's monitor showed no photo: $(cat "$work/alice.log")"
}

t_remembered_control() {
  dial=$(cat "$work/node-griffin-powermate")
  evemu-event "$dial" --type EV_REL --code REL_DIAL --value 1 --sync
  expect_line 20 '"event":"control"'
  wait_for 10 test -f "$state/state.json" || die "no $state/state.json (ls: $(ls "$state"))"
  grep -q '"current_control":"zoom"' "$state/state.json" || die "state.json: $(cat "$state/state.json")"
  # the daemon reads it at start: another remembered control is the one a restart shows,
  # from a file an earlier version wrote (its key was currentControl)
  systemctl stop evcapture.service
  printf '{"currentControl":"exposure-bias"}\n' >"$state/state.json"
  chown evcapture:evcapture "$state/state.json"
  restart_service
  sleep 2
  evemu-event "$dial" --type EV_REL --code REL_DIAL --value 1 --sync
  expect_line 20 '"event":"controls","state":"active".*"control":"exposure-bias"'
}

t_stop_finishes_recording() {
  keys=$(cat "$work/node-gpio-keys-volume-keys")
  key "$keys" KEY_VOLUMEDOWN 1
  expect_line 20 '"action":"video-started"'
  sleep 3
  systemctl stop evcapture.service
  key "$keys" KEY_VOLUMEDOWN 0
  [ "$(systemctl show -P Result evcapture.service)" = success ] || die "stop result $(systemctl show -P Result evcapture.service)"
  video=$(ls -t "$state"/*.mp4 2>/dev/null | head -1)
  [ -n "$video" ] || die "no video in $state"
  cp "$video" /out/stopped-recording.mp4
  frames=$(chroot /host ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
           -of csv=p=0 "$EVC_OUT_HOST/stopped-recording.mp4") || die "ffprobe cannot read $video"
  say "  $video: $frames frames, $(stat -c %s "$video") bytes (ffprobe)"
  [ "${frames:-0}" -ge 1 ] || die "the video has no frames"
  systemctl start evcapture.service
  follow_socket
}

t_security() {
  systemd-analyze security --no-pager evcapture.service >"$work/security.txt" 2>&1 || true
  line=$(grep 'Overall exposure level' "$work/security.txt") || { cat "$work/security.txt"; die "no exposure level"; }
  say "  $line"
  level=$(echo "$line" | sed 's/.*: *\([0-9.]*\).*/\1/')
  awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }' || { grep '✗' "$work/security.txt" | sed 's/^/pkgtest:   /'; die "exposure $level > 2.0"; }
}

# [mqtt] under the unit: the unit allows no IP, so without the drop-in a station with
# [mqtt] reports a clear mqtt-connect error and keeps capturing; with the drop-in the
# package ships as an example (docs/mqtt.md#under-systemd) it reaches a broker on the guest's
# loopback (the host's mosquitto, run from /host) and takes its triggers.
t_mqtt_needs_drop_in() {
  keys=$(cat "$work/node-gpio-keys-volume-keys")
  chroot /host mosquitto -p 18830 >"$work/mosquitto.log" 2>&1 &
  broker=$!
  # whatever happens, the later tests get the unit and the config as they were
  trap 'kill $broker 2>/dev/null; rm -f /etc/systemd/system/evcapture.service.d/mqtt.conf; systemctl daemon-reload;
        cp "$work/config.edited" /etc/evcapture/config.toml; systemctl restart evcapture.service' EXIT
  cat >>/etc/evcapture/config.toml <<CONF

[mqtt]
url = "mqtt://127.0.0.1:18830"
station = "pkgtest"
discovery = false
CONF
  restart_service
  # (the first attempt's error line may come before the socket is followed: the journal has it)
  refused='mqtt: cannot connect to mqtt://127.0.0.1:18830: address family not supported by protocol'
  wait_for 30 sh -c "journalctl -u evcapture.service -o cat --no-pager | grep -qF '$refused'" \
    || die "no error saying the unit refuses IP for MQTT"
  say "  without the drop-in: $(journalctl -u evcapture.service -o cat --no-pager | grep -F "$refused" | tail -1)"
  photos=$(grep -c '"action":"photo"' "$work/socket.log" || true)
  click "$keys"
  say "  a click while MQTT is refused"
  wait_for 60 sh -c "[ \$(grep -c '\"action\":\"photo\"' '$work/socket.log') -gt $photos ]" \
    || die "no photo from a click while MQTT is refused"
  [ "$(systemctl show -P ActiveState evcapture.service)" = active ] || die "not active with MQTT refused"
  example=/usr/share/doc/evcapture/examples/mqtt.conf
  [ -f "$example" ] || die "no $example ($(ls /usr/share/doc/evcapture 2>&1 | tr '\n' ' '); dpkg excludes: $(cat /etc/dpkg/dpkg.cfg.d/* 2>/dev/null | grep -i exclude | tr '\n' ' '))"
  install -D -m 0644 "$example" /etc/systemd/system/evcapture.service.d/mqtt.conf
  systemctl daemon-reload
  restart_service
  wait_for 30 chroot /host mosquitto_sub -p 18830 -t 'evcapture/pkgtest/status' -C 1 -W 2 \
    || die "the station did not announce itself on the broker with the drop-in"
  chroot /host mosquitto_pub -p 18830 -t evcapture/pkgtest/trigger -m '{"command":"photo"}'
  expect_line 30 '"action":"trigger"'
  expect_line 60 '"action":"photo".*"trigger"'
  say "  with the drop-in: $(grep '"action":"photo"' "$work/socket.log" | tail -1 | cut -c1-160)"
}

t_upgrade() {
  before=$(main_pid)
  photos=$(ls "$state"/*.jpg "$state"/*.mp4 | sort)
  dpkg -i "$deb2" </dev/null
  [ "$(dpkg-query -W -f='${Version}' evcapture)" = "$(dpkg-deb -f "$deb2" Version)" ] || die "not upgraded"
  cmp /etc/evcapture/config.toml "$work/config.edited" || die "the upgrade changed the edited config"
  [ ! -e /etc/evcapture/config.toml.dpkg-dist ] || die "dpkg left config.toml.dpkg-dist"
  [ "$(ls "$state"/*.jpg "$state"/*.mp4 | sort)" = "$photos" ] || die "recordings changed"
  [ "$(systemctl show -P ActiveState evcapture.service)" = active ] || die "not active after the upgrade"
  [ "$(main_pid)" != "$before" ] || die "not restarted by the upgrade"
  [ "$(systemctl is-enabled evcapture.service)" = enabled ] || die "not enabled after the upgrade"
}

t_remove() {
  dpkg -r evcapture </dev/null
  [ "$(systemctl show -P ActiveState evcapture.service)" != active ] || die "still active"
  [ ! -e /usr/bin/evcapture ] && [ ! -e /usr/lib/systemd/system/evcapture.service ] || die "files left"
  [ ! -e /usr/lib/udev/rules.d/70-evcapture.rules ] || die "udev rules left"
  cmp /etc/evcapture/config.toml "$work/config.edited" || die "remove must keep the config"
  ls "$state"/*.jpg >/dev/null || die "remove deleted the photos"
}

t_purge() {
  recordings=$(ls "$state"/*.jpg "$state"/*.mp4 "$state"/hook-*.env | sort)
  dpkg --purge evcapture </dev/null
  if dpkg -s evcapture >/dev/null 2>&1; then die "still known to dpkg"; fi
  [ ! -e /etc/evcapture ] || die "/etc/evcapture left: $(ls -la /etc/evcapture)"
  [ ! -e "$state/state.json" ] && [ ! -e "$state/evcapture-shutter.wav" ] || die "daemon state left: $(ls "$state")"
  [ ! -e /etc/systemd/system/multi-user.target.wants/evcapture.service ] || die "enable link left"
  [ "$(ls "$state"/*.jpg "$state"/*.mp4 "$state"/hook-*.env | sort)" = "$recordings" ] || die "purge touched the recordings"
  dpkg-deb -c "$deb2" | awk '$1 !~ /^d/ {print substr($6, 2)}' | while read -r f; do
    [ ! -e "$f" ] || die "$f left after purge"
  done
}

test_case install-starts-service t_install
test_case udev-rules-and-hotplug t_udev_hotplug
test_case memory-five-devices-and-camera t_memory
test_case photo-in-state-directory t_photo
test_case hook-and-sound-in-sandbox t_hook_and_sound
test_case monitor-needs-group-evcapture t_monitor_group
test_case remembered-control-survives-restart t_remembered_control
test_case stop-finishes-recording t_stop_finishes_recording
test_case security-exposure t_security
test_case mqtt-needs-the-drop-in t_mqtt_needs_drop_in
test_case upgrade-keeps-config-and-recordings t_upgrade
test_case remove-keeps-config t_remove
test_case purge-removes-package-files-only t_purge

echo "$failures" >/out/tests.status
