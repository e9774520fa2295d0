/*
 * bench/shuffle/baselines/mpi_alltoallv.c: the MPI_Alltoallv baseline of
 * the shuffle benchmark.  Every one of N ranks holds R rows of W bytes
 * (pseudo-random bytes, a 64-bit key in the first 8), and repartitions
 * them by key, as a distributed hash join would:
 *
 *   1. destination of each row = hash(key) mod N
 *   2. pack the rows per destination into one send buffer (counting sort)
 *   3. MPI_Alltoall of the byte counts per destination
 *   4. MPI_Alltoallv of the packed rows
 *
 * One iteration is steps 1-4, timed on every rank between two barriers;
 * the time of an iteration is the slowest rank's (MPI_Reduce max).  After
 * one warm-up iteration, K timed iterations; rank 0 prints ONE JSON line
 * with the median:
 *
 *   {"kind":"mpi_alltoallv","nranks":N,"row_bytes":W,"rows_per_rank":R,
 *    "iterations":K,"seconds_median":S,"rows_per_s":N*R/S,
 *    "mb_per_s":N*R*W/S/1e6,"btl":"<value of the btl MCA parameter>"}
 *
 * rows_per_s counts every row repartitioned, including the 1/N share a
 * rank keeps (copied by MPI_Alltoallv to itself, through the self btl).
 * After the timed iterations every rank checks (untimed) that it received
 * only rows of its own partition and that the key checksum over all ranks
 * is preserved.
 *
 *   mpi_alltoallv ROW_BYTES ROWS_PER_RANK [ITERATIONS]   (default 5)
 *
 * Build with bench/shuffle/baselines/build-mpi.sh; run-mpi.sh next to it runs
 * it with mpirun over TCP loopback and over shared memory.
 */
#include <mpi.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
fail(const char *msg)
{
	fprintf(stderr, "mpi_alltoallv: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
		fail("out of memory");
	return p;
}

/* splitmix64: pseudo-random data and the key hash */
static uint64_t
mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static int
partition_of(const unsigned char *row, int nranks)
{
	uint64_t	key;

	memcpy(&key, row, sizeof(key));
	return (int) (mix64(key) % (uint64_t) nranks);
}

static long
parse_long(const char *s, long min, const char *what)
{
	char	   *end;
	long		v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < min)
		fail(what);
	return v;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * the btl MCA parameter in effect (e.g. "self,tcp"), read through MPI_T;
 * a malloc'd string
 */
static char *
btl_in_use(void)
{
	int			index, count, provided;
	MPI_T_cvar_handle handle;
	char	   *value;

	if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
		fail("MPI_T_init_thread failed");
	if (MPI_T_cvar_get_index("btl", &index) != MPI_SUCCESS ||
		MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
		fail("cannot find the MPI_T control variable btl");
	value = xmalloc(count + 1);
	if (MPI_T_cvar_read(handle, value) != MPI_SUCCESS)
		fail("cannot read the MPI_T control variable btl");
	value[count] = '\0';
	MPI_T_cvar_handle_free(&handle);
	MPI_T_finalize();
	return value;
}

int
main(int argc, char **argv)
{
	int			rank, nranks;
	long		row_bytes, rows, iterations = 5;
	unsigned char *rowsbuf, *sendbuf, *recvbuf = NULL;
	size_t		recvcap = 0;
	int		   *dest, *sendcounts, *recvcounts, *sdispls, *rdispls;
	size_t	   *fill;
	double	   *times;
	uint64_t	sent_sum = 0, recv_sum = 0, all_sent, all_recv;
	long		recv_rows = 0, bad = 0, all_bad;
	char	   *btl;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (argc < 3 || argc > 4)
		fail("usage: mpi_alltoallv ROW_BYTES ROWS_PER_RANK [ITERATIONS]");
	row_bytes = parse_long(argv[1], 8, "ROW_BYTES must be a number >= 8");
	rows = parse_long(argv[2], 1, "ROWS_PER_RANK must be a number >= 1");
	if (argc == 4)
		iterations = parse_long(argv[3], 1, "ITERATIONS must be a number >= 1");
	/* MPI counts are int: every rank's bytes, sent or received, must fit */
	if ((double) row_bytes * rows * nranks > INT_MAX)
		fail("ROW_BYTES * ROWS_PER_RANK * N must stay below 2^31");
	btl = btl_in_use();

	rowsbuf = xmalloc(rows * row_bytes);
	sendbuf = xmalloc(rows * row_bytes);
	dest = xmalloc(rows * sizeof(int));
	sendcounts = xmalloc(nranks * sizeof(int));
	recvcounts = xmalloc(nranks * sizeof(int));
	sdispls = xmalloc(nranks * sizeof(int));
	rdispls = xmalloc(nranks * sizeof(int));
	fill = xmalloc(nranks * sizeof(size_t));
	times = xmalloc(iterations * sizeof(double));

	/* pseudo-random rows, different on every rank; key = first 8 bytes */
	{
		uint64_t	state = mix64(UINT64_C(0x9e3779b97f4a7c15) * (rank + 1));
		size_t		off;

		for (off = 0; off + 8 <= (size_t) (rows * row_bytes); off += 8)
		{
			uint64_t	r = mix64(state += UINT64_C(0x9e3779b97f4a7c15));

			memcpy(rowsbuf + off, &r, 8);
		}
		for (; off < (size_t) (rows * row_bytes); off++)
			rowsbuf[off] = (unsigned char) mix64(state++ + off);
		for (long i = 0; i < rows; i++)
		{
			uint64_t	key;

			memcpy(&key, rowsbuf + i * row_bytes, 8);
			sent_sum += key;
		}
	}

	for (long it = -1; it < iterations; it++)
	{
		double		t0, elapsed, slowest;
		size_t		recvbytes = 0;
		int			p;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();

		/* destination of every row, and bytes per destination */
		memset(sendcounts, 0, nranks * sizeof(int));
		for (long i = 0; i < rows; i++)
		{
			dest[i] = partition_of(rowsbuf + i * row_bytes, nranks);
			sendcounts[dest[i]] += (int) row_bytes;
		}
		/* pack: the rows of each destination contiguous, in row order */
		for (p = 0; p < nranks; p++)
		{
			sdispls[p] = p == 0 ? 0 : sdispls[p - 1] + sendcounts[p - 1];
			fill[p] = sdispls[p];
		}
		for (long i = 0; i < rows; i++)
		{
			memcpy(sendbuf + fill[dest[i]], rowsbuf + i * row_bytes, row_bytes);
			fill[dest[i]] += row_bytes;
		}

		MPI_Alltoall(sendcounts, 1, MPI_INT, recvcounts, 1, MPI_INT, MPI_COMM_WORLD);
		for (p = 0; p < nranks; p++)
		{
			rdispls[p] = (int) recvbytes;
			recvbytes += recvcounts[p];
		}
		/* the data does not change: this grows only in the warm-up */
		if (recvbytes > recvcap)
		{
			free(recvbuf);
			recvbuf = xmalloc(recvbytes);
			recvcap = recvbytes;
		}
		MPI_Alltoallv(sendbuf, sendcounts, sdispls, MPI_BYTE,
					  recvbuf, recvcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);

		elapsed = MPI_Wtime() - t0;
		MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (it >= 0)
			times[it] = slowest;
		recv_rows = (long) (recvbytes / row_bytes);
	}

	/* untimed check of the last iteration */
	for (long i = 0; i < recv_rows; i++)
	{
		uint64_t	key;

		memcpy(&key, recvbuf + i * row_bytes, 8);
		recv_sum += key;
		bad += partition_of(recvbuf + i * row_bytes, nranks) != rank;
	}
	MPI_Reduce(&sent_sum, &all_sent, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&recv_sum, &all_recv, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

	if (rank == 0)
	{
		double		median, total_rows = (double) rows * nranks;

		if (all_bad != 0 || all_sent != all_recv)
			fail("check failed: rows lost, duplicated or sent to the wrong rank");
		qsort(times, iterations, sizeof(double), cmp_double);
		median = iterations % 2 ? times[iterations / 2]
			: (times[iterations / 2 - 1] + times[iterations / 2]) / 2;
		printf("{\"kind\":\"mpi_alltoallv\",\"nranks\":%d,\"row_bytes\":%ld,"
			   "\"rows_per_rank\":%ld,\"iterations\":%ld,\"seconds_median\":%.6f,"
			   "\"rows_per_s\":%.0f,\"mb_per_s\":%.1f,\"btl\":\"%s\"}\n",
			   nranks, row_bytes, rows, iterations, median,
			   total_rows / median, total_rows * row_bytes / median / 1e6, btl);
	}

	free(rowsbuf);
	free(sendbuf);
	free(recvbuf);
	free(dest);
	free(sendcounts);
	free(recvcounts);
	free(sdispls);
	free(rdispls);
	free(fill);
	free(times);
	free(btl);
	MPI_Finalize();
	return 0;
}
