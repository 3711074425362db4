// libgpiod 1.x or 2.x behind CGPIOD.h. Which one: gpiod.h of 1.x defines
// GPIOD_LINE_BULK_MAX_LINES (the line-bulk API that 2.x removed); 2.x's defines no such macro
// and declares gpiod_request_config_new instead, which the 2.x branch calls — compiled against
// the other header, a branch fails to compile rather than misbehave.
#include "CGPIOD.h"

#include <dirent.h>
#include <errno.h>
#include <gpiod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(GPIOD_LINE_BULK_MAX_LINES)

struct evc_gpio_output {
    struct gpiod_chip *chip;
    struct gpiod_line *line;
};

int evc_gpio_api_major(void) { return 1; }

evc_gpio_output *evc_gpio_output_open(const char *chip_name, int offset, const char *name, int active_low,
                                      const char *consumer, enum evc_gpio_stage *stage) {
    *stage = EVC_GPIO_CHIP;
    struct gpiod_chip *chip = gpiod_chip_open_lookup(chip_name);
    if (!chip) return NULL;
    *stage = EVC_GPIO_LINE;
    errno = 0;
    struct gpiod_line *line = offset >= 0 ? gpiod_chip_get_line(chip, (unsigned)offset) : gpiod_chip_find_line(chip, name);
    if (!line) {
        int e = errno ? errno : ENOENT;
        gpiod_chip_close(chip);
        errno = e;
        return NULL;
    }
    *stage = EVC_GPIO_REQUEST;
    if (gpiod_line_request_output_flags(line, consumer, active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0, 0) != 0) {
        int e = errno;
        gpiod_chip_close(chip);
        errno = e;
        return NULL;
    }
    evc_gpio_output *output = malloc(sizeof *output);
    if (!output) {
        gpiod_line_release(line);
        gpiod_chip_close(chip);
        errno = ENOMEM;
        return NULL;
    }
    output->chip = chip;
    output->line = line;
    return output;
}

int evc_gpio_output_set(evc_gpio_output *output, int active) {
    return gpiod_line_set_value(output->line, active ? 1 : 0) == 0 ? 0 : -1;
}

void evc_gpio_output_close(evc_gpio_output *output) {
    gpiod_line_release(output->line);
    gpiod_chip_close(output->chip);
    free(output);
}

#else

struct evc_gpio_output {
    struct gpiod_line_request *request;
    unsigned int offset;
};

int evc_gpio_api_major(void) { return 2; }

// 2.x opens chips by path only; 1.x's gpiod_chip_open_lookup also took a name under /dev, a
// number and a chip's label. The same lookup here, in that order.
static struct gpiod_chip *open_lookup(const char *name) {
    char path[64 + 256];
    if (strchr(name, '/')) return gpiod_chip_open(name);
    if (name[0] && strspn(name, "0123456789") == strlen(name)) {
        snprintf(path, sizeof path, "/dev/gpiochip%s", name);
        return gpiod_chip_open(path);
    }
    snprintf(path, sizeof path, "/dev/%s", name);
    struct gpiod_chip *chip = gpiod_chip_open(path);
    if (chip || errno != ENOENT) return chip;
    DIR *dev = opendir("/dev");
    if (!dev) return NULL;
    struct dirent *entry;
    while ((entry = readdir(dev))) {
        if (strncmp(entry->d_name, "gpiochip", 8) != 0) continue;
        snprintf(path, sizeof path, "/dev/%s", entry->d_name);
        struct gpiod_chip *candidate = gpiod_chip_open(path);
        if (!candidate) continue;
        struct gpiod_chip_info *info = gpiod_chip_get_info(candidate);
        int match = info && strcmp(gpiod_chip_info_get_label(info), name) == 0;
        if (info) gpiod_chip_info_free(info);
        if (match) {
            closedir(dev);
            return candidate;
        }
        gpiod_chip_close(candidate);
    }
    closedir(dev);
    errno = ENOENT;
    return NULL;
}

evc_gpio_output *evc_gpio_output_open(const char *chip_name, int offset, const char *name, int active_low,
                                      const char *consumer, enum evc_gpio_stage *stage) {
    *stage = EVC_GPIO_CHIP;
    struct gpiod_chip *chip = open_lookup(chip_name);
    if (!chip) return NULL;
    *stage = EVC_GPIO_LINE;
    int e = 0;
    unsigned int line;
    if (offset >= 0) {
        // 1.x refused an offset past the chip's lines when getting the line (EINVAL): so here
        struct gpiod_chip_info *info = gpiod_chip_get_info(chip);
        if (!info) e = errno;
        else if ((size_t)offset >= gpiod_chip_info_get_num_lines(info)) e = EINVAL;
        if (info) gpiod_chip_info_free(info);
        line = (unsigned)offset;
    } else {
        errno = 0;
        int found = gpiod_chip_get_line_offset_from_name(chip, name);
        if (found < 0) e = errno ? errno : ENOENT;
        line = (unsigned)found;
    }
    struct gpiod_line_request *request = NULL;
    struct gpiod_line_settings *settings = NULL;
    struct gpiod_line_config *line_config = NULL;
    struct gpiod_request_config *request_config = NULL;
    if (e == 0) {
        *stage = EVC_GPIO_REQUEST;
        settings = gpiod_line_settings_new();
        line_config = gpiod_line_config_new();
        request_config = gpiod_request_config_new();
        if (!settings || !line_config || !request_config
            || gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_OUTPUT) != 0
            || gpiod_line_settings_set_output_value(settings, GPIOD_LINE_VALUE_INACTIVE) != 0) {
            e = errno ? errno : ENOMEM;
        } else {
            gpiod_line_settings_set_active_low(settings, active_low != 0);
            gpiod_request_config_set_consumer(request_config, consumer);
            if (gpiod_line_config_add_line_settings(line_config, &line, 1, settings) != 0) e = errno;
            else if (!(request = gpiod_chip_request_lines(chip, request_config, line_config))) e = errno;
        }
    }
    if (settings) gpiod_line_settings_free(settings);
    if (line_config) gpiod_line_config_free(line_config);
    if (request_config) gpiod_request_config_free(request_config);
    // the request holds the line by itself: the chip is not needed any more
    gpiod_chip_close(chip);
    evc_gpio_output *output = request ? malloc(sizeof *output) : NULL;
    if (request && !output) {
        gpiod_line_request_release(request);
        e = ENOMEM;
    }
    if (!output) {
        errno = e ? e : EIO;
        return NULL;
    }
    output->request = request;
    output->offset = line;
    return output;
}

int evc_gpio_output_set(evc_gpio_output *output, int active) {
    return gpiod_line_request_set_value(output->request, output->offset,
                                        active ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE) == 0 ? 0 : -1;
}

void evc_gpio_output_close(evc_gpio_output *output) {
    gpiod_line_request_release(output->request);
    free(output);
}

#endif
