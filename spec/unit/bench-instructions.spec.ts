/** The instruction-count bench's reading of callgrind_annotate listings (bench/instructions.ts). */
import { expect } from 'chai';
import { countDump } from '../../bench/instructions';

/** Lines as `callgrind_annotate --threshold=100` (valgrind 3.19) prints them. */
const LISTING = `--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
2,186,536,825 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
129,150,224 ( 5.91%)  ???:Builtins_LoadIC [/usr/bin/node]
 17,610,412 ( 0.81%)  ???:v8::internal::compiler::GraphReducer::ReduceTop() [/usr/bin/node]
  7,759,491 ( 0.35%)  ???:v8::internal::compiler::NodeProperties::HashCode(v8::internal::compiler::Node*) [/usr/bin/node]
  1,000,000 ( 0.05%)  ???:v8::internal::interpreter::BytecodeGenerator::VisitCall(v8::internal::Call*) [/usr/bin/node]
    500,000 ( 0.02%)  ???:v8::internal::Compiler::Compile(v8::internal::Isolate*) [/usr/bin/node]
 14,970,000 ( 0.68%)  ???:0x000000000d119480 [???]
  6,453,550 ( 0.68%)  ???:heap::base::SlotCallbackResult v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>(v8::internal::FullHeapObjectSlot, v8::internal::HeapObject) [/usr/bin/node]
`;

describe('bench:instructions, reading a callgrind listing (countDump)', () => {
  it('takes the program total and sums what the compilers executed, and nothing else', () => {
    expect(countDump(LISTING)).to.deep.equal({ total: 2_186_536_825, compilers: 17_610_412 + 7_759_491 + 1_000_000 + 500_000 });
  });

  it('refuses a listing without a total', () => {
    expect(() => countDump('nothing here\n')).to.throw(/PROGRAM TOTALS/);
  });
});
