// Debian's libmosquitto (libmosquitto-dev): the MQTT client the daemon drives from its own
// epoll loop (mosquitto_loop_read/write/misc), never through mosquitto_loop_start's thread.
#include <mosquitto.h>
