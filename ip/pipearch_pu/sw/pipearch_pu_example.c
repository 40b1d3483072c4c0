/*
 * pipearch_pu_example.c -- driving a PipeArch processing unit from the host.
 *
 * Compiles against the generated register header (sw/pipearch_pu_regs.h, from
 * rtl_gen/regmaps/pipearch_rm.rdl); copied into ip/pipearch_pu/sw/ by `make gen`.
 * Offsets come from the pipearch_pu_t struct, bits from the *_bm / *_bp macros.
 *
 *   load a program   pu_load_program(): copy the image and a fresh context into memory the
 *                    unit reads over its AXI4 master, write PROG_LO/HI and CTX_LO/HI
 *   start            pu_start(): CTRL.START
 *   poll             pu_wait(): STATUS until BUSY is low (bounded)
 *   context switch   pu_request_switch(): CTRL.SWITCH; the unit stores its context at the
 *                    next YIELD, stops with STATUS.SUSPENDED; pu_start() resumes it
 *   error code       pu_error(): ERROR.CODE and ERROR.PC (E_* of golden/pipearch_isa.py)
 *
 * Build the stand-alone demo with -DPIPEARCH_PU_EXAMPLE_MAIN; PU_BASE is where the unit's
 * AXI4-Lite slave is mapped (set it for your system).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pipearch_pu_regs.h"

#define PU_CTX_BYTES 128u          /* context area: 32 words */

static inline uint32_t pu_field(uint32_t word, uint32_t bm, unsigned bp)
{
    return (word & bm) >> bp;
}

/* Program image alignment the unit requires: max(32, 4 * LANES) bytes (CONFIG.LANES). */
static uint64_t pu_alignment(volatile pipearch_pu_t *pu)
{
    uint32_t lanes = pu_field(pu->CONFIG, PIPEARCH_PU__CONFIG__LANES_bm, PIPEARCH_PU__CONFIG__LANES_bp);
    return lanes * 4u > 32u ? lanes * 4u : 32u;
}

/*
 * Copy `image` (header + instructions, as golden/pipearch_asm.py builds it) to `mem`, a host
 * view of unit-visible memory at bus address `mem_bus`, followed by a fresh (all-zero) context;
 * point PROG and CTX at them.  Returns 0, or -1 when the unit is busy or mem_bus is misaligned.
 */
int pu_load_program(volatile pipearch_pu_t *pu, volatile uint8_t *mem, uint64_t mem_bus,
                    const uint8_t *image, size_t len)
{
    uint64_t align = pu_alignment(pu);
    size_t ctx_off = (size_t)((len + align - 1) / align * align);
    size_t i;

    if (pu->STATUS & PIPEARCH_PU__STATUS__BUSY_bm)
        return -1;
    if (mem_bus % align)
        return -1;
    for (i = 0; i < len; i++)
        mem[i] = image[i];
    for (i = 0; i < PU_CTX_BYTES; i++)
        mem[ctx_off + i] = 0;
    pu->PROG_LO = (uint32_t)mem_bus;
    pu->PROG_HI = (uint32_t)(mem_bus >> 32);
    pu->CTX_LO = (uint32_t)(mem_bus + ctx_off);
    pu->CTX_HI = (uint32_t)((mem_bus + ctx_off) >> 32);
    return 0;
}

void pu_start(volatile pipearch_pu_t *pu)
{
    pu->CTRL = PIPEARCH_PU__CTRL__START_bm;
}

void pu_request_switch(volatile pipearch_pu_t *pu)
{
    pu->CTRL = PIPEARCH_PU__CTRL__SWITCH_bm;
}

/* Poll STATUS until BUSY is low, at most max_polls reads; returns the last STATUS word
 * (BUSY still set when the budget ran out). */
uint32_t pu_wait(volatile pipearch_pu_t *pu, unsigned long max_polls)
{
    uint32_t st = pu->STATUS;
    while ((st & PIPEARCH_PU__STATUS__BUSY_bm) && max_polls--)
        st = pu->STATUS;
    return st;
}

/* The error code of the last run (0: none); *pc gets the faulting PC. */
unsigned pu_error(volatile pipearch_pu_t *pu, unsigned *pc)
{
    uint32_t e = pu->ERROR;
    if (pc)
        *pc = pu_field(e, PIPEARCH_PU__ERROR__PC_bm, PIPEARCH_PU__ERROR__PC_bp);
    return pu_field(e, PIPEARCH_PU__ERROR__CODE_bm, PIPEARCH_PU__ERROR__CODE_bp);
}

/* 64-bit busy-cycle count: reading CYCLES_LO latches CYCLES_HI. */
uint64_t pu_cycles(volatile pipearch_pu_t *pu)
{
    uint32_t lo = pu->CYCLES_LO;
    return ((uint64_t)pu->CYCLES_HI << 32) | lo;
}

/*
 * Run a loaded program; when `switch_after` polls have passed, request a context switch
 * (time slice).  Returns 0 when the program finished, 1 when it was suspended (resume with
 * pu_start()), 2 on a timeout, and -(error code) on an error.
 */
int pu_run(volatile pipearch_pu_t *pu, unsigned long switch_after, unsigned long max_polls)
{
    uint32_t st;
    unsigned pc;

    pu_start(pu);
    st = pu_wait(pu, switch_after);
    if (st & PIPEARCH_PU__STATUS__BUSY_bm) {
        pu_request_switch(pu);
        st = pu_wait(pu, max_polls);
    }
    if (st & PIPEARCH_PU__STATUS__BUSY_bm)
        return 2;
    if (st & PIPEARCH_PU__STATUS__ERROR_bm)
        return -(int)pu_error(pu, &pc);
    if (st & PIPEARCH_PU__STATUS__SUSPENDED_bm)
        return 1;
    return 0;
}

#ifdef PIPEARCH_PU_EXAMPLE_MAIN
#ifndef PU_BASE
#define PU_BASE 0x40000000u        /* AXI4-Lite slave of the unit */
#endif
#ifndef PU_MEM_BUS
#define PU_MEM_BUS 0x80000000u     /* shared memory: bus address ...          */
#endif
#ifndef PU_MEM_HOST
#define PU_MEM_HOST 0x80000000u    /* ... and where the host sees it          */
#endif

extern const uint8_t program_image[];
extern const size_t program_image_len;

int main(void)
{
    volatile pipearch_pu_t *pu = (volatile pipearch_pu_t *)(uintptr_t)PU_BASE;
    volatile uint8_t *mem = (volatile uint8_t *)(uintptr_t)PU_MEM_HOST;
    int r;

    if (pu_load_program(pu, mem, PU_MEM_BUS, program_image, program_image_len))
        return 3;
    r = pu_run(pu, 100000ul, 1000000ul);
    while (r == 1)                 /* suspended: another job could run here; START resumes */
        r = pu_run(pu, 100000ul, 1000000ul);   /* from the stored context */
    return r == 0 ? 0 : 1;
}
#endif
