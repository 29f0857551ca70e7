package sim

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

func TestReadWorkload(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []JobSpec
		err  bool
	}{
		{"pollux", "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\nncf-2,35,ncf,1,32768\n",
			[]JobSpec{{Name: "ncf-2", Submit: 35 * time.Second, Application: "ncf", Replicas: 1, BatchSize: 32768}, {Name: "cifar10-0", Submit: 107 * time.Second, Application: "cifar10", Replicas: 6, BatchSize: 2048}}, false},
		{"sia floats and column order", "time,name,batch_size,application,num_replicas,extra\n401.5,a,4096,cifar10,12.0,x\n",
			[]JobSpec{{Name: "a", Submit: 401500 * time.Millisecond, Application: "cifar10", Replicas: 12, BatchSize: 4096}}, false},
		{"ties by name", "name,time,application,num_replicas,batch_size\nb,1,m,1,1\na,1,m,1,1\n",
			[]JobSpec{{Name: "a", Submit: time.Second, Application: "m", Replicas: 1, BatchSize: 1}, {Name: "b", Submit: time.Second, Application: "m", Replicas: 1, BatchSize: 1}}, false},
		{"empty workload", "name,time,application,num_replicas,batch_size\n", nil, false},
		{"missing column", "name,time,application,num_replicas\na,1,m,1\n", nil, true},
		{"negative time", "name,time,application,num_replicas,batch_size\na,-1,m,1,1\n", nil, true},
		{"zero replicas", "name,time,application,num_replicas,batch_size\na,1,m,0,1\n", nil, true},
		{"fractional batch", "name,time,application,num_replicas,batch_size\na,1,m,1,2.5\n", nil, true},
		{"duplicate", "name,time,application,num_replicas,batch_size\na,1,m,1,1\na,2,m,1,1\n", nil, true},
		{"short row", "name,time,application,num_replicas,batch_size\na,1,m\n", nil, true},
		{"NaN time", "name,time,application,num_replicas,batch_size\na,NaN,m,1,1\n", nil, true},
		{"empty", "", nil, true},
		{"workers column", "name,time,application,num_replicas,batch_size,workers\na,1,m,2,64,8\nb,2,m,2,64,\n",
			[]JobSpec{{Name: "a", Submit: time.Second, Application: "m", Replicas: 2, BatchSize: 64, Workers: 8}, {Name: "b", Submit: 2 * time.Second, Application: "m", Replicas: 2, BatchSize: 64}}, false},
		{"zero workers", "name,time,application,num_replicas,batch_size,workers\na,1,m,2,64,0\n", nil, true},
		{"negative workers", "name,time,application,num_replicas,batch_size,workers\na,1,m,2,64,-4\n", nil, true},
		{"fractional workers", "name,time,application,num_replicas,batch_size,workers\na,1,m,2,64,1.5\n", nil, true},
		{"text workers", "name,time,application,num_replicas,batch_size,workers\na,1,m,2,64,many\n", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadWorkload(strings.NewReader(tc.in))
			if tc.err {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestLoadWorkloads(t *testing.T) {
	for dir, jobs := range map[string]int{"workloads": 160, "workloads-0.5": 80, "workloads-1.5": 240, "workloads-2.0": 320, "workloads-realistic": 160} {
		ws, err := LoadWorkloads(polluxdata.FS, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != 8 || ws[0].Name != "workload-1" || ws[7].Name != "workload-8" {
			t.Fatalf("%s: %d workloads, first %q", dir, len(ws), ws[0].Name)
		}
		for _, w := range ws {
			if len(w.Jobs) != jobs {
				t.Errorf("%s/%s: %d jobs, want %d", dir, w.Name, len(w.Jobs), jobs)
			}
		}
	}
	m := fstest.MapFS{
		"w/workload-10.csv": {Data: []byte("name,time,application,num_replicas,batch_size\na,1,m,1,1\n")},
		"w/workload-2.csv":  {Data: []byte("name,time,application,num_replicas,batch_size\na,1,m,1,1\n")},
		"w/notes.txt":       {Data: []byte("x")},
	}
	ws, err := LoadWorkloads(m, "w")
	if err != nil || len(ws) != 2 || ws[0].Name != "workload-2" {
		t.Fatalf("natural order: %v %+v", err, ws)
	}
	if _, err := LoadWorkloads(m, "missing"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := LoadWorkloads(fstest.MapFS{"e/x.txt": {}}, "e"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no csv: %v", err)
	}
}

func FuzzReadWorkload(f *testing.F) {
	f.Add("name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\n")
	f.Add("time,name,batch_size,application,num_replicas\n1e3,a,1,b,2\n")
	f.Add("name,time,application,num_replicas,batch_size\na,1,m,1,1\na,1,m,1,1\n")
	f.Add("\ufeffname,time,application,num_replicas,batch_size\n\"a,b\",0,m,1,1\n")
	f.Add("name,time,application,num_replicas,batch_size,workers\na,1,m,2,64,8\nb,1,m,2,64,\n")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadWorkload(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, j := range jobs {
			if j.Name == "" || seen[j.Name] || j.Application == "" || j.Replicas < 1 || j.BatchSize < 1 || j.Submit < 0 || j.Workers < 0 {
				t.Fatalf("invalid job accepted: %+v", j)
			}
			seen[j.Name] = true
			if i > 0 && jobs[i-1].Submit > j.Submit {
				t.Fatal("not sorted by submit time")
			}
		}
	})
}

func TestNaturalCompare(t *testing.T) {
	in := []string{"w-10", "w-2", "w-1", "a", "w-02b", "w-2a"}
	slices.SortFunc(in, naturalCompare)
	want := []string{"a", "w-1", "w-2", "w-2a", "w-02b", "w-10"}
	if !slices.Equal(in, want) {
		t.Fatalf("%v", in)
	}
}

func TestReadPhilly(t *testing.T) {
	apps := polluxApps(t)
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.0,1,66.0,a\n" +
		"2017-10-09 06:13:03,2951.0,1,2951.0,b\n" +
		"2017-10-09 06:14:03,30.0,1,30.0,b\n" + // too short
		"2017-10-09 08:00:00,36000,8,288000,c\n" + // 80 GPU-h: yolov3
		"2017-10-09 09:00:00,36000,200,7200000,c\n" // 2000 GPU-h: dropped
	jobs, err := ReadPhilly(strings.NewReader(in), apps, PhillyOptions{Jobs: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].Submit != 0 || jobs[1].Submit != 48*time.Minute+52*time.Second {
		t.Fatalf("%+v", jobs)
	}
	if jobs[2].Application != "yolov3" || jobs[2].Replicas != 8 || jobs[2].BatchSize != 64 {
		t.Fatalf("%+v", jobs[2])
	}
	if _, err := ReadPhilly(strings.NewReader("timestamp,duration\n"), apps, PhillyOptions{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzReadPhilly(f *testing.F) {
	apps, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n", uint64(0))
	f.Add("timestamp,duration,num_gpus,gpu_time\n2017-10-09 07:01:55,1e9,1e9,NaN\n", uint64(3))
	f.Fuzz(func(t *testing.T, in string, seed uint64) {
		jobs, err := ReadPhilly(strings.NewReader(in), apps, PhillyOptions{Jobs: 5, Seed: seed})
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnknownApplication) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if len(jobs) == 0 || len(jobs) > 5 {
			t.Fatalf("%d jobs", len(jobs))
		}
		for _, j := range jobs {
			if j.Replicas < 1 || j.BatchSize < 1 || j.Submit < 0 || apps[j.Application] == nil {
				t.Fatalf("bad job %+v", j)
			}
		}
	})
}
