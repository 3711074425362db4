// One GPIO output line through libgpiod, the same four functions over libgpiod 1.x (Debian 12's
// libgpiod2, v1.6) and 2.x (Debian 13's libgpiod3, v2.2), whose APIs differ. gpiod.c picks the
// API from the gpiod.h it is compiled with (docs/booth.md#outputs).
#ifndef EVC_CGPIOD_H
#define EVC_CGPIOD_H

typedef struct evc_gpio_output evc_gpio_output;

/// Where `evc_gpio_output_open` failed: the chip, the line on it, or the request.
enum evc_gpio_stage { EVC_GPIO_CHIP = 0, EVC_GPIO_LINE = 1, EVC_GPIO_REQUEST = 2 };

/// Opens `chip` (a name under /dev such as "gpiochip0", its number, a path, or a chip's
/// label), finds the line (`offset`, or `name` when `offset` is negative) and requests it as
/// an output, initially inactive, active-low when asked. NULL on failure, with errno set and
/// `*stage` saying which step failed.
evc_gpio_output *evc_gpio_output_open(const char *chip, int offset, const char *name, int active_low,
                                      const char *consumer, enum evc_gpio_stage *stage);
/// Sets the line's logical level (1: active). 0, or -1 with errno set.
int evc_gpio_output_set(evc_gpio_output *output, int active);
/// Releases the line and closes the chip.
void evc_gpio_output_close(evc_gpio_output *output);
/// The libgpiod API compiled in: 1 or 2.
int evc_gpio_api_major(void);

#endif
