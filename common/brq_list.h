// SPDX-License-Identifier: MIT
// An intrusive doubly-linked list, as NNG's nni_list: each item holds a brq_link at
// an offset the list is given once (brq_list_init), so one item can sit on several
// lists through several links. No allocation and no locking: the owner's lock guards
// the list. Used by the gateway's waiters and the worker runtime's job lists.
#ifndef BRQ_LIST_H
#define BRQ_LIST_H

#include <stddef.h>

// An item's place on one list (NULLs at the ends and off the list).
typedef struct brq_link {
	void *prev, *next;
} brq_link;

typedef struct brq_list {
	void  *head, *tail;
	size_t n;
	size_t link; // offsetof(item type, its brq_link for this list)
} brq_list;

static inline void
brq_list_init(brq_list *l, size_t link)
{
	l->head = l->tail = NULL;
	l->n              = 0;
	l->link           = link;
}

// item's link on l.
static inline brq_link *
brq_list_link(const brq_list *l, void *item)
{
	return (brq_link *) ((char *) item + l->link);
}

// The item after item on l (NULL at the tail).
static inline void *
brq_list_next(const brq_list *l, void *item)
{
	return brq_list_link(l, item)->next;
}

// Makes b follow a on l: a NULL makes b the head, b NULL makes a the tail.
static inline void
brq_list_bridge(brq_list *l, void *a, void *b)
{
	if (a != NULL)
		brq_list_link(l, a)->next = b;
	else
		l->head = b;
	if (b != NULL)
		brq_list_link(l, b)->prev = a;
	else
		l->tail = a;
}

// Puts item (on no list through this link) between prev and next, neighbours on l.
static inline void
brq_list_insert(brq_list *l, void *prev, void *item, void *next)
{
	brq_list_bridge(l, prev, item);
	brq_list_bridge(l, item, next);
	l->n++;
}

static inline void
brq_list_push(brq_list *l, void *item)
{
	brq_list_insert(l, l->tail, item, NULL);
}

static inline void
brq_list_push_front(brq_list *l, void *item)
{
	brq_list_insert(l, NULL, item, l->head);
}

// Takes item (on l) off l; its link is cleared.
static inline void
brq_list_del(brq_list *l, void *item)
{
	brq_link *k = brq_list_link(l, item);
	brq_list_bridge(l, k->prev, k->next);
	k->prev = k->next = NULL;
	l->n--;
}

// Takes the head off l and returns it; NULL when l is empty.
static inline void *
brq_list_pop(brq_list *l)
{
	void *item = l->head;
	if (item != NULL)
		brq_list_del(l, item);
	return item;
}

#endif
