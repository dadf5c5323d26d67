#!/usr/bin/env node
// The conformance kit's command: `inplace-conformance --kind <Kind> ...`, the same options as `inplace conformance`.
import { conformanceMain } from '../dist/contract/conformance/main.js';

process.exitCode = await conformanceMain(process.argv.slice(2));
