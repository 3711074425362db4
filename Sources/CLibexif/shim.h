#include <libexif/exif-data.h>
#include <libexif/exif-entry.h>
#include <libexif/exif-utils.h>
#include <stdlib.h>
#include <string.h>

// ---- EXIF for photos (used by Sources/Actions/Exif.swift) --------------------------------

/// Sets an ASCII tag (creating it) in `ifd`; `value` is copied with its terminating NUL.
static inline int evc_exif_set_ascii(ExifData *ed, ExifIfd ifd, ExifTag tag, const char *value) {
    ExifEntry *e = exif_content_get_entry(ed->ifd[ifd], tag);
    if (!e) {
        e = exif_entry_new();
        if (!e) return -1;
        e->tag = tag;
        exif_content_add_entry(ed->ifd[ifd], e);
        exif_entry_unref(e);  // the content holds it
    }
    size_t n = strlen(value) + 1;
    ExifMem *mem = exif_mem_new_default();
    unsigned char *data = exif_mem_alloc(mem, (ExifLong)n);
    if (!data) {
        exif_mem_unref(mem);
        return -1;
    }
    memcpy(data, value, n);
    if (e->data) exif_mem_free(mem, e->data);
    exif_mem_unref(mem);
    e->data = data;
    e->size = (unsigned int)n;
    e->components = (unsigned long)n;
    e->format = EXIF_FORMAT_ASCII;
    return 0;
}

/// The EXIF block of an APP1 segment ("Exif\0\0" and the TIFF structure) carrying the
/// time a frame was taken: DateTime, DateTimeOriginal and DateTimeDigitized
/// ("YYYY:MM:DD HH:MM:SS", local time) and their sub-seconds ("123456"). On success returns 0
/// and a malloc'd buffer in *out (the caller frees it).
static inline int evc_exif_time_block(const char *datetime, const char *subsec, unsigned char **out,
                                      unsigned int *out_size) {
    *out = NULL;
    *out_size = 0;
    ExifData *ed = exif_data_new();
    if (!ed) return -1;
    exif_data_set_byte_order(ed, EXIF_BYTE_ORDER_INTEL);
    exif_data_set_data_type(ed, EXIF_DATA_TYPE_COMPRESSED);
    int rc = 0;
    rc |= evc_exif_set_ascii(ed, EXIF_IFD_0, EXIF_TAG_DATE_TIME, datetime);
    rc |= evc_exif_set_ascii(ed, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, datetime);
    rc |= evc_exif_set_ascii(ed, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_DIGITIZED, datetime);
    rc |= evc_exif_set_ascii(ed, EXIF_IFD_EXIF, EXIF_TAG_SUB_SEC_TIME, subsec);
    rc |= evc_exif_set_ascii(ed, EXIF_IFD_EXIF, EXIF_TAG_SUB_SEC_TIME_ORIGINAL, subsec);
    rc |= evc_exif_set_ascii(ed, EXIF_IFD_EXIF, EXIF_TAG_SUB_SEC_TIME_DIGITIZED, subsec);
    if (rc == 0) exif_data_save_data(ed, out, out_size);
    exif_data_unref(ed);
    return (rc == 0 && *out) ? 0 : -1;
}

/// Reads DateTimeOriginal and SubSecTimeOriginal back from a JPEG file's bytes (for tests
/// and `evcapture`'s own checks). Returns 0 when both were found.
static inline int evc_exif_read_original(const unsigned char *jpeg, unsigned int size, char *datetime, size_t dlen,
                                         char *subsec, size_t slen) {
    ExifData *ed = exif_data_new_from_data(jpeg, size);
    if (!ed) return -1;
    ExifEntry *d = exif_content_get_entry(ed->ifd[EXIF_IFD_EXIF], EXIF_TAG_DATE_TIME_ORIGINAL);
    ExifEntry *s = exif_content_get_entry(ed->ifd[EXIF_IFD_EXIF], EXIF_TAG_SUB_SEC_TIME_ORIGINAL);
    int rc = -1;
    if (d && s) {
        exif_entry_get_value(d, datetime, (unsigned int)dlen);
        exif_entry_get_value(s, subsec, (unsigned int)slen);
        rc = 0;
    }
    exif_data_unref(ed);
    return rc;
}
