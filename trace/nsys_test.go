package trace

import (
	"strings"
	"testing"
)

// Old header (nsys up to 2023.x) with the notes nsys prints around it.
const nsysOld = `Generating SQLite file /tmp/mm.sqlite from /tmp/mm.nsys-rep
Processing [/tmp/mm.sqlite] with [/opt/nvidia/nsight-systems/2023.4.4/host-linux-x64/reports/cuda_gpu_kern_sum.py]... 
"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"
"71.4","1250000","20","62500.0","62400.0","61000","65000","1200.5","nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNN"
"20.0","350000","20","17500.0","17500.0","17000","18000","300.0","void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)"
"8.6","150000","20","7500.0","7500.0","7400","7600","50.0","void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"
`

// New header (2024.x on) with the launch shapes: one name, two shapes.
const nsysNew = `Processing [/tmp/mm.sqlite] with [/opt/nvidia/nsight-systems/2025.1.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]... 
Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),GridXYZ,BlockXYZ,Name
60.0,900000,10,90000.0,90000.0,89000,91000,500.0,"  132    1    1","  384    1    1",ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)
30.0,450000,5,90000.0,90000.0,89000,91000,500.0,"   66    1    1","  384    1    1",ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)
10.0,150000,30,5000.0,5000.0,4000,6000,100.0,"    8    1    1","  128    1    1",fused_moe_kernel
`

const nsysMem = `"Time (%)","Total Time (ns)","Count","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Operation"
`

const nsysMemNew = `Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation
95.0,2000000,3,666666.7,600000.0,500000,900000,200000.0,[CUDA memcpy Host-to-Device]
5.0,100000,2,50000.0,50000.0,40000,60000,14142.1,[CUDA memset]
`

func TestNsysCSVBothHeaders(t *testing.T) {
	s, err := NsysCSV(strings.NewReader(nsysOld), strings.NewReader(nsysMem), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Kernels != 60 || s.KernelUS != 1750 || s.Top[0].Short != "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNN" || s.Top[0].Cat != CatGEMM ||
		s.Top[1].Short != "reduce_kernel<sum_functor>" || s.Top[2].Cat != CatElementwise {
		t.Errorf("old header: %+v", s)
	}
	s, err = NsysCSV(strings.NewReader(nsysNew), strings.NewReader(nsysMemNew), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Top) != 2 || s.Top[0].Count != 15 || s.Top[0].TotalUS != 1350 || s.Top[0].Cat != CatComm || s.Top[1].Cat != CatMoE {
		t.Errorf("new header: %+v", s.Top)
	}
	if s.MemoryUS != 2100 || s.MemoryOps != 5 {
		t.Errorf("memory %v µs in %d", s.MemoryUS, s.MemoryOps)
	}
	if _, err := NsysCSV(strings.NewReader("ERROR: file not found\n"), nil, Options{}); err == nil {
		t.Error("nsys's error output was taken for a table")
	}
}
