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

/// Encodes a YUYV (4:2:2) image as a baseline JPEG. On success returns 0 and a malloc'd
/// buffer in *out (the caller frees it); on failure returns -1 with a message in errbuf.
static inline int evc_jpeg_encode_yuyv(const unsigned char *yuyv, int width, int height, int stride,
                                       int quality, unsigned char **out, unsigned long *out_size,
                                       char *errbuf, size_t errlen) {
    struct jpeg_compress_struct cinfo;
    struct evc_jpeg_error jerr;
    unsigned char *volatile row = NULL;
    *out = NULL;
    *out_size = 0;
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = evc_jpeg_error_exit;
    jerr.pub.output_message = evc_jpeg_output_message;
    if (setjmp(jerr.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(row);
        free(*out);
        *out = NULL;
        *out_size = 0;
        evc_jpeg_copy_message(jerr.message, errbuf, errlen);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, out, out_size);
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
