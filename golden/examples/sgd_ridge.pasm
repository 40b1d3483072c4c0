# Ridge-regression SGD (PipeArch Alg. 1) for a PipeArch-PU with LANES=4, NREGIONS=6,
# DEPTH=512, AMEM_DEPTH=128: m = 8 samples of n = 7 features (2 lines each), batch 1,
# partitions of 4 samples, 2 epochs, alpha = 0.25, lambda2 = 0.02 in Q32.16.
# It is the program golden.pipearch_programs.sgd_job(m=8, n=7, loss="ridge",
# alpha=0.25, lam2=0.02, epochs=2, partition=4, stream=False) builds
# (golden/tests/test_pipearch_asm_cli.py checks that they are byte-identical).
#
#   python -m golden.pipearch_asm asm golden/examples/sgd_ridge.pasm -o sgd_ridge.bin \
#       --lanes 4 --nregions 6 --depth 512 --amem-depth 128 --listing sgd_ridge.lst
#   python -m golden.pipearch_asm disasm sgd_ridge.bin
#
# Memory (line addresses, 16 bytes per line): model x at 0x20a (2 lines), samples a at
# 524 (one copy per epoch in visiting order, 2 lines each), labels b at 556 (one line
# each, lane 0).  Regions: 0 model x and its working copy (lines 2..3), 1 the
# partition's samples, 2 its labels, 3 dot products (line 0) and steps (line 1).
# Registers: R1 epoch, R2 epochs, R3/R4 sample/label line address, R5 partition,
# R6 partitions per epoch, R7 sample line offset, R8 sample, R9 samples per partition,
# R12 2*batch (unused with batch 1).

    LOAD acc(2), 0x20a, regions=[0]         # x -> region 0 lines 0..1
    LI R2, 2
    LI R6, 2
    LI R9, 4
    LI R12, 2
    LI R3, 524
    LI R4, 556
epoch:
    LI R5, 0
partition:
    LOAD acc(8), 0x0, regions=[1], rb=R3, addr_rb=1    # 4 samples, line address 0 + R3
    LOAD acc(4), 0x0, regions=[2], rb=R4, addr_rb=1    # their 4 labels
    LI R7, 0
    LI R8, 0
sample:
    # dot = <x, a_k>  (region 3 line 0)
    DOTSIG ch(0, 2), ch(1, 2, keep=1, ra=1), ch(3, 1, keep=1), dim=2, ra=R7
    # step = alpha * (dot - b_k) with alpha = 0.25 = 16384 / 2**16  (region 3 line 1)
    SCALAR ch(3, 1, keep=1), ch(2, 1, keep=1, ra=1), ch(3, 1, 1, keep=1), alpha=16384, ra=R8
    # x' = x - step * a_k  (working copy, region 0 lines 2..3)
    MULTSUB ch(0, 2), ch(1, 2, ra=1), ch(3, 1, 1), ch(0, 2, 2), dim=2, ra=R7
    # x = x' - 2*alpha*lambda2 * x  (c = 0.01 = 655 / 2**16)
    L2REG ch(0, 2, 2), ch(0, 2), ch(0, 2), dim=2, c=655
    ADDI R7, R7, 2
    ADDI R8, R8, 1
    BLT R8, R9, sample
    ADDI R3, R3, 8
    ADDI R4, R4, 4
    ADDI R5, R5, 1
    YIELD                                   # a context switch may happen here
    BLT R5, R6, partition
    ADDI R1, R1, 1
    BLT R1, R2, epoch
    STORE ch(0, 2), 0x20a                   # the trained model back to memory
    END

.store_context                              # run when the PU is switched out at the YIELD
    STORE ch(0, 2), 0x20a
    END

.load_context                               # run when a suspended context is started
    LOAD acc(2), 0x20a, regions=[0]
    RESUME
