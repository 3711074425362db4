#!/bin/sh
# Guest script for the camera system tests under the reference lab (/work/shared/vmlab), until
# the project's own harness (Tests/System/run) has a fake camera. From the package root:
#   swift build --build-tests &&
#   /work/shared/vmlab/run --timeout 600 -- Tests/V4L2Lab/camera-tests.sh \
#       .build/debug/evcapturePackageTests.xctest --testing-library swift-testing [--filter ...]
# It starts vivid and the fake UVC camera, tells the tests where they are through the
# environment, and serves "stop"/"start" requests for the fake camera: the tests run chrooted
# in the host tree (vmlab-host), where the guest's camera helper does not exist, and /run is
# shared between the two.
vivid=$(vmlab-vivid start) || exit 1
uvc=$(vmlab-uvc-camera start) || exit 1
ctl=/run/evcapture-camera-lab
mkdir -p $ctl
echo "$uvc" >$ctl/node
(
  while :; do
    if [ -f $ctl/request ]; then
      req=$(cat $ctl/request); rm -f $ctl/request
      case $req in
        stop) vmlab-uvc-camera stop; echo "$?" >$ctl/reply.tmp ;;
        start) n=$(vmlab-uvc-camera start); rc=$?; echo "$n" >$ctl/node; echo "$rc" >$ctl/reply.tmp ;;
        *) echo 2 >$ctl/reply.tmp ;;
      esac
      mv $ctl/reply.tmp $ctl/reply
    fi
    sleep 0.1
  done
) &
server=$!
export EVCAPTURE_TEST_VIVID=$vivid EVCAPTURE_TEST_UVC_LAB=$ctl EVCAPTURE_TEST_UVC_LOG=/run/vmlab/fakeuvc.log
echo "camera lab: vivid $vivid, fake UVC camera $uvc"
vmlab-host "$@"
rc=$?
kill $server
echo "--- what the fake camera received since its last start"
vmlab-uvc-camera log | grep -E 'SET_CUR|lost'
exit $rc
