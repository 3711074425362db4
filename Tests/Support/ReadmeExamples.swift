/// Configs the README shows, for the tests that run them (each test also checks the README
/// still shows them).
public enum ReadmeExamples {
    /// The README's Raspberry Pi config (its five-minute tour): a shutter button, an
    /// encoder and its push switch, told apart by the keys they have.
    public static let piConfig = """
        [devices.shutter]
        bus = "0019"
        has = ["KEY_VOLUMEDOWN"]
        roles = { KEY_VOLUMEDOWN = "primary" }

        [devices.knob-push]
        bus = "0019"
        has = ["KEY_ENTER"]
        roles = { KEY_ENTER = "light-press" }

        [devices.encoder]
        bus = "0019"
        has = ["REL_X"]
        kind = "encoder"
        """
}
