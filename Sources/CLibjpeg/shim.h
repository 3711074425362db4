#include <stdio.h>
#include <jpeglib.h>

// ---- Error-safe wrappers (used by Sources/Bridge/Actions/JPEG.swift) ---------------------
// libjpeg reports errors by calling error_exit, which by default exits the process; Swift
// cannot longjmp, so the whole compress/decompress sequence lives here behind setjmp.
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

struct evc_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

static void evc_jpeg_error_exit(j_common_ptr cinfo) {
    struct evc_jpeg_error *err = (struct evc_jpeg_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

// Warnings are counted (num_warnings), not printed to stderr.
static void evc_jpeg_output_message(j_common_ptr cinfo) { (void)cinfo; }

static inline void evc_jpeg_copy_message(const char *message, char *errbuf, size_t errlen) {
    if (errbuf && errlen > 0) {
        strncpy(errbuf, message, errlen - 1);
        errbuf[errlen - 1] = 0;
    }
}

// The encoder's output: a buffer this file owns from start to end (jpeg_mem_dest frees the
// buffer it grew from and keeps the new one to itself until jpeg_finish_compress, so on an
// error the caller could reach neither), grown by doubling up to `limit` bytes.
struct evc_jpeg_destination {
    struct jpeg_destination_mgr pub;
    unsigned char *buffer;
    size_t size;
    size_t limit;
};

static void evc_jpeg_destination_init(j_compress_ptr cinfo) { (void)cinfo; }

static boolean evc_jpeg_destination_grow(j_compress_ptr cinfo) {
    struct evc_jpeg_destination *dest = (struct evc_jpeg_destination *)cinfo->dest;
    struct evc_jpeg_error *err = (struct evc_jpeg_error *)cinfo->err;
    size_t grown = dest->size * 2 > dest->limit ? dest->limit : dest->size * 2;
    if (grown <= dest->size) {
        snprintf(err->message, sizeof err->message, "the JPEG would be larger than %zu bytes", dest->limit);
        longjmp(err->jump, 1);
    }
    unsigned char *bigger = (unsigned char *)realloc(dest->buffer, grown);
    if (!bigger) {
        strcpy(err->message, "out of memory");
        longjmp(err->jump, 1);
    }
    // libjpeg calls this when the whole buffer is full, whatever free_in_buffer said.
    dest->pub.next_output_byte = bigger + dest->size;
    dest->pub.free_in_buffer = grown - dest->size;
    dest->buffer = bigger;
    dest->size = grown;
    return TRUE;
}

static void evc_jpeg_destination_term(j_compress_ptr cinfo) { (void)cinfo; }

/// Encodes a YUYV (4:2:2) image as a baseline JPEG of at most `limit` bytes. On success
/// returns 0 and a malloc'd buffer in *out (the caller frees it); on failure returns -1 with
/// a message in errbuf and *out NULL.
static inline int evc_jpeg_encode_yuyv(const unsigned char *yuyv, int width, int height, int stride,
                                       int quality, unsigned long limit, unsigned char **out,
                                       unsigned long *out_size, char *errbuf, size_t errlen) {
    struct jpeg_compress_struct cinfo;
    struct evc_jpeg_error jerr;
    // volatile: read after longjmp, written after setjmp.
    struct evc_jpeg_destination dest;
    struct evc_jpeg_destination *volatile owned = &dest;
    unsigned char *volatile row = NULL;
    *out = NULL;
    *out_size = 0;
    dest.size = limit < 4096 ? (size_t)limit : 4096;
    dest.limit = (size_t)limit;
    dest.buffer = dest.size ? (unsigned char *)malloc(dest.size) : NULL;
    if (!dest.buffer) {
        evc_jpeg_copy_message(limit ? "out of memory" : "no room for a JPEG (limit 0)", errbuf, errlen);
        return -1;
    }
    dest.pub.next_output_byte = dest.buffer;
    dest.pub.free_in_buffer = dest.size;
    dest.pub.init_destination = evc_jpeg_destination_init;
    dest.pub.empty_output_buffer = evc_jpeg_destination_grow;
    dest.pub.term_destination = evc_jpeg_destination_term;
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = evc_jpeg_error_exit;
    jerr.pub.output_message = evc_jpeg_output_message;
    if (setjmp(jerr.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(row);
        free(owned->buffer);  // the one live buffer: grown in place, never freed by libjpeg
        evc_jpeg_copy_message(jerr.message, errbuf, errlen);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    cinfo.dest = &dest.pub;
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_YCbCr;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    row = (unsigned char *)malloc((size_t)width * 3);
    if (!row) {
        strcpy(jerr.message, "out of memory");
        longjmp(jerr.jump, 1);
    }
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        const unsigned char *src = yuyv + (size_t)cinfo.next_scanline * (size_t)stride;
        for (int x = 0; x < width; x++) {
            // Each 4-byte group Y0 U Y1 V covers two pixels that share U and V.
            const unsigned char *group = src + (size_t)(x / 2) * 4;
            row[x * 3 + 0] = group[(x & 1) ? 2 : 0];
            row[x * 3 + 1] = group[1];
            row[x * 3 + 2] = group[3];
        }
        JSAMPROW rows[1] = {row};
        jpeg_write_scanlines(&cinfo, rows, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(row);
    *out = dest.buffer;
    *out_size = (unsigned long)(dest.size - dest.pub.free_in_buffer);
    return 0;
}

/// Decodes a whole JPEG image (and throws the pixels away): for checking that a file or a
/// camera frame is a complete image. Returns 0 and the image's size, or -1 with a message.
static inline int evc_jpeg_decode_check(const unsigned char *data, unsigned long size, int *width,
                                        int *height, int *components, int *warnings,
                                        char *errbuf, size_t errlen) {
    struct jpeg_decompress_struct cinfo;
    struct evc_jpeg_error jerr;
    unsigned char *volatile row = NULL;
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = evc_jpeg_error_exit;
    jerr.pub.output_message = evc_jpeg_output_message;
    if (setjmp(jerr.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(row);
        evc_jpeg_copy_message(jerr.message, errbuf, errlen);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, size);
    jpeg_read_header(&cinfo, TRUE);
    jpeg_start_decompress(&cinfo);
    row = (unsigned char *)malloc((size_t)cinfo.output_width * (size_t)cinfo.output_components);
    if (!row) {
        strcpy(jerr.message, "out of memory");
        longjmp(jerr.jump, 1);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[1] = {row};
        jpeg_read_scanlines(&cinfo, rows, 1);
    }
    *width = (int)cinfo.output_width;
    *height = (int)cinfo.output_height;
    *components = cinfo.output_components;
    jpeg_finish_decompress(&cinfo);
    *warnings = (int)jerr.pub.num_warnings;
    jpeg_destroy_decompress(&cinfo);
    free(row);
    return 0;
}
// ---- end of error-safe wrappers ----------------------------------------------------------
