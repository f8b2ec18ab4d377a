/* The job file of the emulated verification: what the host writes for the
 * AArch64 driver (tests/aarch64/driver.c) and what the driver writes back.
 * Both sides are little-endian with 8-byte integers, so the file is the
 * in-memory form of these fields, in this order, with no padding:
 *
 *   job file:   u32 magic LMJ_MAGIC, u32 nshapes, then per shape:
 *     u32 nargs, i64 R,
 *     per argument: u32 kind (LMJ_VALUE, LMJ_INPUT, LMJ_OUTPUT), then
 *       LMJ_VALUE:  u64 the argument itself (a scalar's bits, a dimension);
 *       LMJ_INPUT:  u64 n, then n bytes: the input buffer;
 *       LMJ_OUTPUT: u64 n, u64 lead, then n bytes: the output's region as
 *                   the host's verification lays it out (lead guard bytes,
 *                   the sentinel-filled buffer, the trailing guard); the
 *                   argument points lead bytes into it,
 *     u32 njobs, per job: u32 entry (an index into the driver's table),
 *       u32 nchunks, then nchunks pairs of i64 (first, count): the calls
 *       entry(args, first, count) that one launch makes, in order.
 *
 *   result file: per shape, per job: u32 status (0 ok, LMJ_WROTE_INPUT when
 *     an input buffer changed), then for each LMJ_OUTPUT argument in order
 *     its n bytes as the job left them (guards included).
 *
 * Every job starts from the regions and inputs as sent. */
#ifndef LANEMAP_TESTS_AARCH64_JOBS_H
#define LANEMAP_TESTS_AARCH64_JOBS_H

#define LMJ_MAGIC 0x314A4D4Cu /* "LMJ1" */
#define LMJ_VALUE 0u
#define LMJ_INPUT 1u
#define LMJ_OUTPUT 2u
#define LMJ_WROTE_INPUT 1u

#endif
