/* SPDX-License-Identifier: MIT */
/* test-stack-stash.c - capture/stack-stash.c: nodes interned by (parent,
 * process, kind, address) with dense ids, chains innermost first, a stash
 * continuing a capture's ids, and the nodes stored into a capture and read
 * back. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "stack-stash.h"

static void test_intern(void)
{
	struct stack_stash s = {0};
	const struct cygprof_stack_node *nd;
	uint32_t a, b, c;
	int err = 0;

	a = stack_stash_intern(&s, &err, 0, 1, CYGPROF_FRAME_FN, 0x1000);
	b = stack_stash_intern(&s, &err, a, 1, CYGPROF_FRAME_RA, 0x1100);
	c = stack_stash_intern(&s, &err, a, 2, CYGPROF_FRAME_RA, 0x1100); /* another process */
	CHECK_EQ_INT(err, 0);
	CHECK_EQ_U64(a, 1);
	CHECK_EQ_U64(b, 2);
	CHECK_EQ_U64(c, 3);
	/* found again, in any order */
	CHECK_EQ_U64(stack_stash_intern(&s, &err, a, 2, CYGPROF_FRAME_RA, 0x1100), 3);
	CHECK_EQ_U64(stack_stash_intern(&s, &err, 0, 1, CYGPROF_FRAME_FN, 0x1000), 1);
	/* the kind counts */
	CHECK_EQ_U64(stack_stash_intern(&s, &err, 0, 1, CYGPROF_FRAME_RA, 0x1000), 4);
	CHECK_EQ_U64(s.n, 4);
	nd = stack_stash_get(&s, 2);
	CHECK(nd != NULL);
	if (nd) {
		CHECK_EQ_U64(nd->id, 2);
		CHECK_EQ_U64(nd->parent, 1);
		CHECK_EQ_U64(nd->proc_idx, 1);
		CHECK_EQ_U64(nd->kind, CYGPROF_FRAME_RA);
		CHECK_EQ_U64(nd->addr, 0x1100);
	}
	CHECK(stack_stash_get(&s, 0) == NULL);
	CHECK(stack_stash_get(&s, 5) == NULL);
	stack_stash_release(&s);
	CHECK_EQ_U64(s.n, 0);
}

static void test_chain_base(void)
{
	struct stack_stash s;
	const uint64_t f[] = {0x30, 0x20, 0x10}; /* innermost first */
	const struct cygprof_stack_node *nd;
	uint32_t id, id2;
	int err = 0;

	stack_stash_init(&s, 40); /* a capture of 40 nodes: ids from 41 */
	id = stack_stash_chain(&s, &err, 3, f, 3);
	CHECK_EQ_INT(err, 0);
	CHECK_EQ_U64(id, 43);
	CHECK(stack_stash_get(&s, 40) == NULL);
	nd = stack_stash_get(&s, 43);
	CHECK(nd && nd->kind == CYGPROF_FRAME_IP && nd->addr == 0x30 && nd->parent == 42);
	nd = stack_stash_get(&s, 41);
	CHECK(nd && nd->kind == CYGPROF_FRAME_RA && nd->addr == 0x10 && nd->parent == 0);
	/* a chain sharing the outer frames shares their nodes */
	id2 = stack_stash_chain(&s, &err, 3, f + 1, 2);
	CHECK_EQ_U64(id2, 44); /* 0x20 as the innermost: an IP, not the RA node 42 */
	CHECK_EQ_U64(stack_stash_get(&s, 44)->parent, 41);
	CHECK_EQ_U64(stack_stash_chain(&s, &err, 3, f, 0), 0);
	stack_stash_release(&s);
	CHECK_EQ_U64(s.base, 40);
}

static void test_overflow(void)
{
	struct stack_stash s;
	uint32_t id;
	int err = 0;

	stack_stash_init(&s, UINT32_MAX - 1);
	id = stack_stash_intern(&s, &err, 0, 0, CYGPROF_FRAME_FN, 1);
	CHECK_EQ_INT(err, 0);
	CHECK_EQ_U64(id, UINT32_MAX);
	id = stack_stash_intern(&s, &err, 7, 0, CYGPROF_FRAME_FN, 2);
	CHECK_EQ_INT(err, -EOVERFLOW);
	CHECK_EQ_U64(id, 7); /* the parent */
	stack_stash_release(&s);
}

static void test_store(void)
{
	char dir[] = "/tmp/cygprof-test-stash.XXXXXX", path[64];
	struct cygprof_capture *cap = NULL;
	struct cygprof_stack_node *back = NULL;
	struct stack_stash s = {0};
	const uint64_t f[] = {0x30, 0x20};
	size_t n = 0;
	int err = 0;

	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	snprintf(path, sizeof path, "%s/s.cap", dir);
	stack_stash_chain(&s, &err, 0, f, 2);
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(stack_stash_store(&s, cap), 0);
	stack_stash_chain(&s, &err, 0, f + 1, 1); /* a new node: 0x20 as an IP */
	CHECK_EQ_INT(stack_stash_store(&s, cap), 0);
	CHECK_EQ_INT(stack_stash_store(&s, cap), 0); /* nothing new */
	CHECK_EQ_U64(s.stored, 3);
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_publish(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &back, &n), 0);
	CHECK_EQ_U64(n, 3);
	if (n == 3) {
		CHECK_EQ_U64(back[1].addr, 0x30);
		CHECK_EQ_U64(back[1].parent, 1);
		CHECK_EQ_U64(back[2].kind, CYGPROF_FRAME_IP);
	}
	free(back);
	cygprof_capture_close(cap);
	stack_stash_release(&s);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	RUN_TEST(test_intern);
	RUN_TEST(test_chain_base);
	RUN_TEST(test_overflow);
	RUN_TEST(test_store);
	CHECK_DONE();
}
