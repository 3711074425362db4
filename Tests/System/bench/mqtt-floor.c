// The MQTT floor of the rig benchmark (rig.py): mosquitto's own publish → receive through
// the broker, with the same library evcapture uses (libmosquitto, MQTT 3.1.1, QoS 1,
// TCP_NODELAY), its network loop on libmosquitto's own thread.
//
//   mqtt-floor sub PORT TOPIC   subscribes on 127.0.0.1:PORT; prints "ready" once the
//                               broker acknowledged the subscription, then "recv PAYLOAD T"
//                               for every message, at once (T: CLOCK_MONOTONIC in the
//                               message callback, the moment the subscriber has it, as
//                               evcapture's trigger line carries its own `time`; rig.py
//                               also stamps the line's arrival on its pipe)
//   mqtt-floor pub PORT TOPIC   prints "ready" once connected; for every "send SEQ" line on
//                               stdin publishes SEQ and prints "sent SEQ T" (T: CLOCK_MONOTONIC
//                               just before mosquitto_publish)
#define _GNU_SOURCE
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *topic;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_connect(struct mosquitto *m, void *sub, int rc) {
    if (rc != 0) {
        fprintf(stderr, "mqtt-floor: refused: %s\n", mosquitto_connack_string(rc));
        exit(1);
    }
    if (sub) {
        mosquitto_subscribe(m, NULL, topic, 1);
    } else {
        printf("ready\n");
        fflush(stdout);
    }
}

static void on_subscribe(struct mosquitto *m, void *sub, int mid, int n, const int *qos) {
    (void)m, (void)sub, (void)mid, (void)n, (void)qos;
    printf("ready\n");
    fflush(stdout);
}

static void on_message(struct mosquitto *m, void *sub, const struct mosquitto_message *msg) {
    (void)m, (void)sub;
    double t = now_s();
    printf("recv %.*s %.6f\n", msg->payloadlen, (const char *)msg->payload, t);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "sub") && strcmp(argv[1], "pub"))) {
        fprintf(stderr, "usage: mqtt-floor sub|pub PORT TOPIC\n");
        return 2;
    }
    int sub = strcmp(argv[1], "sub") == 0;
    topic = argv[3];
    mosquitto_lib_init();
    char id[64];
    snprintf(id, sizeof id, "mqtt-floor-%s-%d", argv[1], (int)getpid());
    struct mosquitto *m = mosquitto_new(id, true, sub ? (void *)1 : NULL);
    if (!m) {
        perror("mqtt-floor: mosquitto_new");
        return 1;
    }
    mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(m, on_connect);
    mosquitto_subscribe_callback_set(m, on_subscribe);
    mosquitto_message_callback_set(m, on_message);
    int rc = mosquitto_connect(m, "127.0.0.1", atoi(argv[2]), 60);
    if (rc != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "mqtt-floor: connect: %s\n", mosquitto_strerror(rc));
        return 1;
    }
    mosquitto_loop_start(m);
    char line[128];
    while (fgets(line, sizeof line, stdin)) {
        unsigned long seq;
        if (sub || sscanf(line, "send %lu", &seq) != 1) continue;
        char payload[32];
        int n = snprintf(payload, sizeof payload, "%lu", seq);
        double t = now_s();
        rc = mosquitto_publish(m, NULL, topic, n, payload, 1, false);
        if (rc != MOSQ_ERR_SUCCESS) {
            fprintf(stderr, "mqtt-floor: publish: %s\n", mosquitto_strerror(rc));
            return 1;
        }
        printf("sent %lu %.6f\n", seq, t);
        fflush(stdout);
    }
    mosquitto_disconnect(m);
    mosquitto_loop_stop(m, false);
    mosquitto_destroy(m);
    mosquitto_lib_cleanup();
    return 0;
}
