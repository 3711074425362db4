// Types MQTT once declared are the floor's now (docs/architecture.md#modules): importing MQTT
// imports them, as it did when they were MQTT's own.
@_exported import Vocabulary
