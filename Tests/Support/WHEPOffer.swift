/// An SDP offer in the form Chromium makes for a receive-only video (its other codecs left
/// out): H.264 in packetization mode 0 (which webrtcbin's payloader does not send) and 1,
/// the latter with NACK feedback and its retransmission format (RFC 4588, `rtx` with
/// `apt=108`), for the WHEP endpoint's tests (docs/live-view.md#webrtc).
public let chromiumLikeWHEPOffer = [
    "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0", "m=video 9 UDP/TLS/RTP/SAVPF 96 102 108 109",
    "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0", "a=ice-ufrag:6fdY", "a=ice-pwd:CgQxrC/ghIJu7AX2vJXHuaQh",
    "a=fingerprint:sha-256 38:53:C6:A7:48:4C:70:B3:78:0C:5F:44:2C:37:4E:3B:91:FA:6A:73:FE:E3:EE:22:B5:14:C4:46:93:94:D3:09",
    "a=setup:actpass", "a=mid:0", "a=recvonly", "a=rtcp-mux", "a=rtpmap:96 VP8/90000", "a=rtpmap:102 H264/90000",
    "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f", "a=rtpmap:108 H264/90000",
    "a=rtcp-fb:108 nack", "a=rtcp-fb:108 nack pli",
    "a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f", "a=rtpmap:109 rtx/90000",
    "a=fmtp:109 apt=108", "",
].joined(separator: "\r\n")
