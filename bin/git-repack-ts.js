#!/usr/bin/env node
import { run } from '../dist/cli/main.js';

await run();
