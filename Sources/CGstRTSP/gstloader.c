#include "gstloader.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised;

int evc_gst_open(const char *const *sonames, int count, const evc_gst_symbol *symbols, int symbol_count, const char *hint,
                 char *error, size_t error_size) {
    void *handles[16];
    if (count > 16) return -1;
    for (int i = 0; i < count; i++) {
        // Kept open for the process's life: GStreamer cannot be unloaded.
        handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            snprintf(error, error_size, "cannot load %s (%s): install %s", sonames[i], dlerror(), hint);
            return -1;
        }
    }
    for (int i = 0; i < symbol_count; i++) {
        *symbols[i].slot = dlsym(handles[symbols[i].library], symbols[i].name);
        if (!*symbols[i].slot) {
            snprintf(error, error_size, "%s has no %s", sonames[symbols[i].library], symbols[i].name);
            return -1;
        }
    }
    // libgstreamer is the same object for every caller (dlopen counts references).
    pthread_mutex_lock(&init_lock);
    int result = 0;
    if (!initialised) {
        void *gst = dlopen("libgstreamer-1.0.so.0", RTLD_NOW | RTLD_LOCAL);
        void *glib = dlopen("libglib-2.0.so.0", RTLD_NOW | RTLD_LOCAL);
        gboolean (*init_check)(int *, char ***, GError **) = gst ? (gboolean(*)(int *, char ***, GError **))dlsym(gst, "gst_init_check") : NULL;
        void (*error_free)(GError *) = glib ? (void (*)(GError *))dlsym(glib, "g_error_free") : NULL;
        GError *e = NULL;
        if (!init_check || !error_free) {
            snprintf(error, error_size, "cannot load libgstreamer-1.0.so.0: install %s", hint);
            result = -1;
        } else if (!init_check(NULL, NULL, &e)) {
            snprintf(error, error_size, "GStreamer did not initialise: %s", e ? e->message : "no reason given");
            if (e) error_free(e);
            result = -1;
        } else {
            initialised = 1;
        }
    }
    pthread_mutex_unlock(&init_lock);
    return result;
}
