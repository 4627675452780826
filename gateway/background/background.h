// SPDX-License-Identifier: MIT
// The gateway's background threads as the rest of the gateway sees them: the janitor
// (lease reaper and retention), the depth monitor with the terminal figures that `stats`
// reads, the scheduler of periodic jobs, the RPC self-probe, the cancel listener and the
// console's history writer. Each keeps a header of its own in this folder; code outside
// background/ includes this one only, so what the folder offers is listed here
// (tests/layout_test.sh holds the rule). bgthread.h, the shape every one of these
// threads shares, stays inside.
#ifndef BRQ_GATEWAY_BACKGROUND_H
#define BRQ_GATEWAY_BACKGROUND_H

#include "figures.h"
#include "history.h"
#include "janitor.h"
#include "cancel_listener.h"
#include "monitor.h"
#include "scheduler.h"
#include "selfprobe.h"

#endif
