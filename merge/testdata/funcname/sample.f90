! Inventory routines
module inventory
  implicit none
  integer, parameter :: capacity = 10
contains

  subroutine add(items, n, value)
    integer, intent(inout) :: items(:)
    integer, intent(inout) :: n
    integer, intent(in) :: value
    n = n + 1
    items(n) = value
  end subroutine add

  integer function total(items, n)
    integer, intent(in) :: items(:)
    integer, intent(in) :: n
    integer :: i
    total = 0
    do i = 1, n
      total = total + items(i)
    end do
  end function total

  module procedure helper
  end procedure

end module inventory

program main
  use inventory
  integer :: items(capacity), n
  n = 0
  call add(items, n, 3)
  call add(items, n, 4)
  print *, total(items, n)
end program main
