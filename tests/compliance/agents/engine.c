/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compliance-agent-engine: this project's engine behind the agent protocol (agent.h). The
 * suite runs every script through it as well as directly, which keeps the protocol and the
 * remote adapter honest: both runs must agree.
 */
#include <stdio.h>

#include "compliance/agent.h"

int main(void)
{
	return agent_serve(&iut_engine, stdin, stdout);
}
