#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import LinuxIO
import Vocabulary

/// The broker's socket as the loop watches it (a duplicate of libmosquitto's descriptor,
/// ``MQTTClient/watched``), its readiness handed to libmosquitto, and the bounded exchange a
/// clean stop runs on it.
extension MQTTClient {
    func socketReady(_ readiness: Readiness) {
        guard let m = mosq, phase == .connecting || phase == .connected else { return }
        if phase == .connecting, !readiness.isDisjoint(with: [.hangup, .error]), let w = watched {
            // The TCP connection failed or ended before the MQTT one was made: say why now.
            // libmosquitto 2.0.11 takes a failed TLS handshake's system error as "try again"
            // and never closes the socket, which stays in hang-up and would wake the loop on
            // every turn until the connect timeout. The socket's error says why; if
            // libmosquitto's connect call took it already (a refusal on this host comes at
            // once), the errno that call left does (docs/mqtt.md#connection).
            let e = pendingSocketError(w.fd)
            let error = e != 0 ? e : stepConnectionError
            if mosquitto_socket(m) >= 0 { mosquitto_disconnect(m) }
            socketReplaced = true
            if phase == .connecting {
                failed(error != 0 ? SystemError(errno: error).reason : "the connection closed before it was made")
            }
            sync()
            return
        }
        var rc = MOSQ_ERR_SUCCESS.rawValue
        if !readiness.intersection([.readable, .hangup, .error]).isEmpty {
            rc = mosquitto_loop_read(m, 16)
        }
        if rc == MOSQ_ERR_SUCCESS.rawValue, readiness.contains(.writable) || readiness.contains(.error),
            mosquitto_socket(m) >= 0
        {
            rc = mosquitto_loop_write(m, 16)
        }
        if rc != MOSQ_ERR_SUCCESS.rawValue, phase == .connecting || phase == .connected {
            // libmosquitto reports most losses through its disconnect callback; some
            // (a refused TCP connect seen on write) only through the return code.
            let reason = describeMosquitto(rc)
            if mosquitto_socket(m) >= 0 { mosquitto_disconnect(m) }
            connectionLost(reason)
        }
        sync()
    }

    /// SO_ERROR (reading it clears it): why the socket's connection failed, or 0.
    private func pendingSocketError(_ fd: Int32) -> Int32 {
        var e: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &length) == 0 ? e : 0
    }

    /// Watches libmosquitto's current socket (renewing the duplicate when it was replaced)
    /// for reading, and for writing only while it has output queued.
    func sync() {
        guard let m = mosq else { return unwatch() }
        let sock = mosquitto_socket(m)
        if socketReplaced || sock < 0 {
            unwatch()
            socketReplaced = false
        }
        // Only while a connection is being made or used: a dead socket libmosquitto has not
        // closed yet (it closes it on the next attempt) would otherwise wake the loop for ever.
        guard sock >= 0, phase == .connecting || phase == .connected else { return }
        let interest: Readiness = mosquitto_want_write(m) ? [.readable, .writable] : [.readable]
        if let w = watched {
            if w.interest != interest {
                do {
                    try loop.setInterest(w.token, interest)
                    watched?.interest = interest
                } catch {
                    logger.warning("MQTT socket: \(error)")
                }
            }
            return
        }
        // libmosquitto makes its socket without close-on-exec: a program started by anything
        // in the daemon would keep the broker connection open after the daemon died, and the
        // broker would not publish the will (docs/mqtt.md#connection).
        _ = fcntl(sock, F_SETFD, fcntl(sock, F_GETFD) | FD_CLOEXEC)
        let dup = fcntl(sock, F_DUPFD_CLOEXEC, 0)
        guard dup >= 0 else {
            logger.warning("MQTT socket: dup: \(SystemError(errno: errno))")
            return
        }
        do {
            let token = try loop.register(
                fd: dup, interest: interest,
                handler: { [weak self] readiness in self?.assumeIsolated { $0.socketReady(readiness) } },
                onRemove: { close(dup) })
            watched = (token, dup, interest)
        } catch {
            close(dup)
            logger.warning("MQTT socket: \(error)")
        }
    }

    func unwatch() {
        guard let w = watched else { return }
        watched = nil
        loop.remove(w.token)  // on this thread: removed now, its onRemove closes the duplicate
    }

    /// Shutdown only: reads and writes the broker's socket on this thread until `done` or
    /// the deadline (libmosquitto's callbacks run meanwhile; a stopped client ignores them).
    func exchange(_ m: OpaquePointer, until deadline: Int64, _ done: () -> Bool) {
        while !done(), monotonicMicroseconds() < deadline {
            let sock = mosquitto_socket(m)
            guard sock >= 0 else { return }
            var p = pollfd(fd: sock, events: Int16(POLLIN) | (mosquitto_want_write(m) ? Int16(POLLOUT) : 0), revents: 0)
            guard poll(&p, 1, 50) >= 0 || errno == EINTR else { return }
            if p.revents & Int16(POLLOUT) != 0, mosquitto_loop_write(m, 1) != MOSQ_ERR_SUCCESS.rawValue { return }
            if p.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, mosquitto_loop_read(m, 1) != MOSQ_ERR_SUCCESS.rawValue { return }
        }
    }
}
