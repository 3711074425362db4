/// The web page at `/`: the live picture, the active control and its value (live from
/// `/events`, as a knob turns), a shutter button and the latest photos. Static, embedded in
/// the binary; sized for a phone as well as a desktop. The picture is WebRTC (the browser's
/// `RTCPeerConnection` and `/api/whep`) where it works, else MJPEG (docs/live-view.md#webrtc).
enum LiveViewPage {
    /// The page; `webRTC`: whether `/api/whep` answers (else the page goes straight to MJPEG).
    static func html(webRTC: Bool) -> String {
        template.replacing("data-webrtc=\"on\"", with: "data-webrtc=\"\(webRTC ? "on" : "off")\"")
    }

    static let template = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>evcapture</title>
        <style>
        body{margin:0;background:#111;color:#eee;font:16px system-ui,sans-serif}
        #view{position:relative;max-width:960px;margin:0 auto}
        #live,#video{width:100%;display:block;background:#000;min-height:120px}
        [hidden]{display:none!important}
        #overlay{position:absolute;left:0;right:0;bottom:0;padding:8px 12px;background:rgba(0,0,0,.55)}
        #overlay.off{opacity:.35}
        #name{font-weight:600;text-transform:capitalize}
        #value{float:right;font-variant-numeric:tabular-nums}
        #slider{width:100%}
        #bar{display:flex;gap:8px;justify-content:center;padding:12px}
        button{font-size:18px;padding:10px 16px;border-radius:24px;border:0;background:#333;color:#eee}
        #shutter{width:72px;height:72px;border-radius:50%;background:#eee;color:#111;font-weight:700}
        #photos{display:grid;grid-template-columns:repeat(auto-fill,minmax(120px,1fr));gap:6px;padding:8px;max-width:960px;margin:0 auto}
        #photos img{width:100%;display:block}
        #status{text-align:center;color:#999;font-size:13px}
        </style></head>
        <body>
        <div id="view" data-webrtc="on"><video id="video" muted autoplay playsinline></video><img id="live" alt="live view" hidden>
        <div id="overlay" class="off"><span id="name">no control</span><span id="value"></span>
        <input id="slider" type="range" min="0" max="1" step="any" value="0"></div></div>
        <div id="bar"><button id="minus" aria-label="step down">&minus;</button>
        <button id="shutter" aria-label="take a photo">&#9679;</button>
        <button id="plus" aria-label="step up">+</button><button id="next">next</button></div>
        <div id="status"></div>
        <div id="photos"></div>
        <script>
        "use strict";
        const $ = id => document.getElementById(id);
        let control = null, value = 0, sliding = false;
        function post(path) {
          return fetch(path, {method: "POST"}).then(r => { if (!r.ok) $("status").textContent = path + ": " + r.status; });
        }
        function show(c) {
          $("overlay").classList.remove("off");
          $("name").textContent = c.title || c.control;
          value = c.value;
          // The control's own format ("%.1f×"), as `evcapture monitor` shows it.
          const f = /%\\.(\\d)f/.exec(c.format || "");
          $("value").textContent = f ? c.format.replace(f[0], c.value.toFixed(+f[1])) : String(Math.round(c.value * 100) / 100);
          if (typeof c.min === "number" && typeof c.max === "number") { $("slider").min = c.min; $("slider").max = c.max; }
          if (!sliding) $("slider").value = c.value;
        }
        // Dragging the slider turns the knob, a detent at a time, until the value passes the target.
        async function slideTo(target) {
          for (let i = 0; i < 100; i++) {
            const before = value, up = target > value;
            if (Math.abs(target - value) < 1e-9) break;
            await post("api/control/step?by=" + (up ? 1 : -1));
            await new Promise(r => setTimeout(r, 120));
            if (value === before || (up ? value >= target : value <= target)) break;
          }
        }
        $("slider").addEventListener("input", () => { sliding = true; });
        $("slider").addEventListener("change", async e => { await slideTo(parseFloat(e.target.value)); sliding = false; $("slider").value = value; });
        $("shutter").onclick = () => post("api/capture");
        $("plus").onclick = () => post("api/control/step?by=1");
        $("minus").onclick = () => post("api/control/step?by=-1");
        $("next").onclick = () => post("api/control/next");
        function photos() {
          fetch("api/media").then(r => r.json()).then(list => {
            const box = $("photos");
            box.textContent = "";
            for (const f of list.files.filter(f => f.kind === "photo").slice(0, 12)) {
              const a = document.createElement("a"), img = document.createElement("img");
              a.href = img.src = "media/" + encodeURIComponent(f.name);
              img.loading = "lazy"; img.alt = f.name;
              a.appendChild(img); box.appendChild(a);
            }
          }).catch(() => {});
        }
        const events = new EventSource("events");
        let received = 0;
        events.onmessage = m => {
          $("view").dataset.events = ++received;
          let e; try { e = JSON.parse(m.data); } catch { return; }
          if (e.event === "control") show(e);
          else if (e.event === "controls" && e.control && e.control !== control) { control = e.control; $("name").textContent = e.control; }
          else if (e.event === "controls" && e.state === "inactive") $("overlay").classList.add("off");
          else if (e.event === "action" && e.file) photos();
        };
        let failures = 0;
        events.onerror = () => { $("status").textContent = "reconnecting…"; $("view").dataset.eventErrors = ++failures; };
        events.onopen = () => { $("status").textContent = ""; };
        // The picture's size once a frame is shown (for people and tests reading the DOM).
        $("live").onload = () => { $("view").dataset.picture = $("live").naturalWidth + "x" + $("live").naturalHeight; };
        // The stream ends when the daemon stops or restarts: try again.
        $("live").onerror = () => setTimeout(() => { $("live").src = "stream.mjpg?" + Date.now(); }, 2000);
        // MJPEG: every browser shows it, at a JPEG per frame.
        function mjpeg(why) {
          if ($("view").dataset.transport === "mjpeg") return;
          $("view").dataset.transport = "mjpeg";
          if (why) $("view").dataset.webrtcError = String(why);
          $("video").hidden = true; $("live").hidden = false;
          $("live").src = "stream.mjpg";
        }
        // WebRTC through WHEP: H.264 at a fraction of MJPEG's bits. The offer goes with its
        // candidates (no trickle ICE); a picture that does not come in 45 s falls back to MJPEG.
        let session = null;
        async function webrtc() {
          const pc = new RTCPeerConnection();
          window.peer = pc;
          // The connection's ICE states as they came (for people and tests reading the DOM).
          pc.oniceconnectionstatechange = () => { $("view").dataset.ice = (($("view").dataset.ice || "") + " " + pc.iceConnectionState).trim(); };
          pc.addTransceiver("video", {direction: "recvonly"});
          pc.ontrack = e => { $("video").srcObject = e.streams[0] || new MediaStream([e.track]); };
          await pc.setLocalDescription(await pc.createOffer());
          await new Promise(done => {
            if (pc.iceGatheringState === "complete") return done();
            pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") done(); };
            setTimeout(done, 2000);
          });
          const r = await fetch("api/whep", {method: "POST", headers: {"Content-Type": "application/sdp"}, body: pc.localDescription.sdp});
          if (r.status !== 201) throw new Error("api/whep: " + r.status);
          session = r.headers.get("Location");
          await pc.setRemoteDescription({type: "answer", sdp: await r.text()});
          return pc;
        }
        function endSession() {
          if (session) fetch(session, {method: "DELETE", keepalive: true}).catch(() => {});
          session = null;
          if (window.peer) window.peer.close();
        }
        $("video").onloadeddata = () => {
          if ($("view").dataset.transport === "mjpeg") return;  // a picture after the page gave up
          $("view").dataset.transport = "webrtc";
          $("view").dataset.picture = $("video").videoWidth + "x" + $("video").videoHeight;
        };
        addEventListener("pagehide", endSession);
        if ($("view").dataset.webrtc === "off") {
          mjpeg("WebRTC is off");
        } else if (!window.RTCPeerConnection || /[?&]mjpeg/.test(location.search)) {
          mjpeg(window.RTCPeerConnection ? "asked for MJPEG" : "no RTCPeerConnection");
        } else {
          // The first answer can wait for GStreamer's first load (seconds on a small board).
          let gaveUp = false, timer = null;
          const giveUp = (why, ms) => setTimeout(() => { gaveUp = true; endSession(); mjpeg(why); }, ms);
          timer = giveUp("no answer within 60 s", 60000);
          webrtc().then(pc => {
            clearTimeout(timer);
            if (gaveUp) return endSession();
            // Under emulation (the test lab) a first picture was seen to take over 20 s.
            timer = giveUp("no picture within 45 s", 45000);
            pc.onconnectionstatechange = () => {
              if (pc.connectionState === "failed") { clearTimeout(timer); endSession(); mjpeg("connection failed"); }
            };
            $("video").addEventListener("loadeddata", () => clearTimeout(timer), {once: true});
          }).catch(e => { clearTimeout(timer); endSession(); mjpeg(e.message || e); });
        }
        photos();
        </script></body></html>
        """
}
