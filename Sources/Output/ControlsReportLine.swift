import Camera
import Vocabulary

extension JSONLines {
    /// One JSON line (``JSONLines``): `event` `"controls"`, then `camera`, `bindings`,
    /// `controls`, and `problem`/`rejected` when there is no camera, `time` last.
    public static func controlsReport(_ report: CameraControlsReport, time: Timestamp) -> String {
        var fields: [(String, JSONValue)] = []
        if let camera = report.camera {
            fields.append(
                (
                    "camera",
                    .object([
                        ("device", .string(camera.device)), ("identity", .string(camera.identity)),
                        ("card", .string(camera.card)), ("driver", .string(camera.driver)), ("bus_info", .string(camera.busInfo)),
                    ])
                ))
        } else {
            fields.append(("camera", .null))
        }
        fields.append(
            (
                "bindings",
                .object([
                    ("zoom", report.bindings.zoom.map { .string($0) } ?? .null),
                    ("exposure-bias", report.bindings.exposureBias.map { .string($0) } ?? .null),
                ])
            ))
        fields.append(
            (
                "controls",
                .array(
                    report.controls.map { c in
                        var o: [(String, JSONValue)] = [
                            ("id", .string(c.id)), ("name", .string(c.name)), ("title", .string(c.title)), ("type", .string(c.type)),
                            ("minimum", .int(c.minimum)), ("maximum", .int(c.maximum)), ("step", .int(Int64(clamping: c.step))),
                            ("default", .int(c.default)), ("value", c.value.map { .int($0) } ?? .null),
                            ("flags", .array(c.flags.map { .string($0) })),
                        ]
                        if let menu = c.menu {
                            o.append(
                                (
                                    "menu",
                                    .array(
                                        menu.map { m in
                                            .object(
                                                [("index", .int(m.index)), ("name", .string(m.name))]
                                                    + (m.value.map { [("value", .int($0))] } ?? []))
                                        })
                                ))
                        }
                        o.append(("binds", c.binds.map { .string($0) } ?? .null))
                        return .object(o)
                    })
            ))
        if let problem = report.problem {
            fields.append(("problem", .string(problem)))
            fields.append(("rejected", .object(report.rejected.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        }
        return object(event: "controls", time: time, fields)
    }

}
