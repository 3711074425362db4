#include <turbojpeg.h>

// tjMCUWidth / tjMCUHeight are C arrays, which Swift imports as tuples: one lookup here.
static inline int evc_tj_mcu_width(int subsamp) {
    return subsamp >= 0 && subsamp < TJ_NUMSAMP ? tjMCUWidth[subsamp] : 16;
}
static inline int evc_tj_mcu_height(int subsamp) {
    return subsamp >= 0 && subsamp < TJ_NUMSAMP ? tjMCUHeight[subsamp] : 16;
}
